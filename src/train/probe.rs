//! `resnet50-substation`: the zoo's ResNet-50 given a trained head, the backbone kept at its
//! seeded weights (a linear probe). Its 94 MB of weights are over the commit limit and a
//! whole training on candle's CPU kernels would take days here; the seeded backbone is
//! rebuilt bit for bit from its seed by `zoo build`, so only the head (`fc`, 20,490
//! parameters) is trained and committed.
//!
//! The close-ups are pre-processed as the classification pipeline does (224×224), the FP32
//! zoo graph runs once per image on tract with the pooled features (2,048 per image) taken
//! as an extra output, and the head trains on those features centred on the training
//! split's per-feature mean and divided by one scale, the mean of the per-feature standard
//! deviations (AdamW on raw features, whose mean is ~6× their spread, crawls). One scale,
//! not one per feature: some pooled features are constant (σ = 0) or nearly so, and
//! dividing by their σ would fold weights of 10⁴ and more into `fc`, which wrecked the INT8
//! variant's per-channel weight scales (MSE 1.0e3, top-1 0 of 8). Saving folds the
//! transform back into `fc` (W/s and b − (μ/s)·W), so the zoo model with the saved head
//! computes the logits the trainer evaluated. Held out: top-1 accuracy against the
//! majority class.

use std::collections::HashMap;

use candle_core::{DType, Device, Result, Tensor};

use super::graph::Graph;
use super::workload::{Batch, Evaluation, Workload, WorkloadOptions, gather, subset};
use crate::model::onnx::{DataType, ModelProto};
use crate::report::schema::train::DataRef;
use crate::task::inputs::{PANEL_HELDOUT, PANEL_TRAIN};

const NAME: &str = "resnet50-substation";
const SIZE: usize = 224;
/// Pooled features per image (ResNet-50's last stage).
const FEATURES: usize = 2048;
const CLASSES: usize = 10;

/// Standardised features of a split with their classes (and the hash of its images).
type Split = super::classify::Images;

pub struct Probe {
    train: Split,
    heldout: Split,
    mean: Vec<f32>,
    scale: f32,
}

/// The seeded FP32 ResNet-50 with the head's input (the flattened pool) as a second output,
/// and that value's name.
fn tapped() -> std::result::Result<(ModelProto, String), super::Error> {
    let (e, _) = crate::zoo::parse_name(NAME).ok_or(super::Error::NoZooModel(NAME.into()))?;
    let mut m = crate::zoo::build_graph(&e, DataType::FLOAT);
    let g = m
        .graph
        .as_mut()
        .ok_or(super::Error::NoZooModel(NAME.into()))?;
    let pool = g
        .node
        .iter()
        .find(|n| n.op_type == "MatMul" && n.input.get(1).is_some_and(|w| w == "fc.weight"))
        .and_then(|n| n.input.first().cloned())
        .ok_or(super::Error::NoZooModel(format!("{NAME} (no fc layer)")))?;
    g.output.push(crate::model::onnx::ValueInfoProto {
        name: pool.clone(),
        r#type: None,
    });
    Ok((m, pool))
}

/// The pooled features of the close-ups `idx` of `split` (in order), their classes and the
/// split's hash: the close-ups are made and pre-processed here while one tract session per
/// core runs the tapped graph on those made before.
fn features(
    split: &str,
    idx: &[usize],
) -> std::result::Result<(Vec<f32>, Vec<u32>, String), super::Error> {
    use prost::Message;
    use std::sync::mpsc;
    let (m, _) = tapped()?;
    let dir = std::env::temp_dir().join(format!("acceval-probe-{}", std::process::id()));
    crate::util::create_dir_all(&dir)?;
    let path = dir.join(format!("{NAME}-features-{split}.onnx"));
    crate::util::fs::write_file(&path, &m.encode_to_vec())?;
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .clamp(1, idx.len().max(1));
    let row = 3 * SIZE * SIZE;
    let mut x = vec![0f32; idx.len() * FEATURES];
    let mut y = Vec::with_capacity(idx.len());
    let mut hash = super::workload::SplitHash::default();
    let made = std::thread::scope(|s| -> std::result::Result<(), super::Error> {
        let (done_tx, done_rx) = mpsc::channel();
        let mut work = Vec::new();
        for _ in 0..threads {
            let (tx, rx) = mpsc::sync_channel::<(usize, Vec<f32>)>(2);
            work.push(tx);
            let done = done_tx.clone();
            let path = &path;
            s.spawn(move || worker(path, rx, done));
        }
        drop(done_tx);
        let mut sent = 0usize;
        'make: for chunk in idx.chunks(8) {
            let (xs, ys) = super::classify::images_hashed(split, chunk, SIZE, &mut hash)?;
            y.extend(ys);
            for image in xs.chunks(row) {
                if work[sent % threads].send((sent, image.to_vec())).is_err() {
                    break 'make; // that worker stopped: its error is on `done`
                }
                sent += 1;
            }
        }
        drop(work);
        let mut got = 0usize;
        for r in done_rx {
            let (pos, f) = r?;
            x[pos * FEATURES..(pos + 1) * FEATURES].copy_from_slice(&f);
            got += 1;
        }
        if got != idx.len() {
            return Err(super::Error::NoZooModel(format!(
                "{NAME}: features of {got} of {} close-ups",
                idx.len()
            )));
        }
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&dir);
    made?;
    Ok((x, y, hash.finish()))
}

type Features = std::result::Result<(usize, Vec<f32>), super::Error>;

/// One core's share: its own tract session (sessions are not `Send`), pre-processed
/// images in, pooled features out.
fn worker(
    model: &std::path::Path,
    rx: std::sync::mpsc::Receiver<(usize, Vec<f32>)>,
    done: std::sync::mpsc::Sender<Features>,
) {
    use crate::model::tensor::{HostTensor, TensorData};
    let opts = crate::backend::LoadOptions {
        input_shapes: vec![("input".into(), vec![1, 3, SIZE, SIZE])],
        threads: Some(1),
        ..Default::default()
    };
    let spec: crate::backend::BackendSpec = "cpu".parse().expect("a valid spec");
    let mut session = match crate::backend::load(model, &spec, &opts) {
        Ok(s) => s,
        Err(e) => {
            let _ = done.send(Err(e.into()));
            return;
        }
    };
    for (pos, image) in rx {
        let x = ndarray::ArrayD::from_shape_vec(vec![1, 3, SIZE, SIZE], image)
            .expect("one image's values");
        let r = session
            .run(&[HostTensor {
                name: "input".into(),
                data: TensorData::F32(x),
            }])
            .map_err(super::Error::from)
            .and_then(|outs| {
                let f: Vec<f32> = outs
                    .get(1)
                    .map(|t| t.data.to_f64().into_iter().map(|v| v as f32).collect())
                    .unwrap_or_default();
                if f.len() == FEATURES {
                    Ok((pos, f))
                } else {
                    Err(super::Error::NoZooModel(format!(
                        "{NAME}: the pool gave {} values, not {FEATURES}",
                        f.len()
                    )))
                }
            });
        let failed = r.is_err();
        if done.send(r).is_err() || failed {
            return;
        }
    }
}

/// The per-feature mean over `n` rows and one scale: the mean of the per-feature standard
/// deviations (floored at 1e-6).
fn moments(x: &[f32], n: usize) -> (Vec<f32>, f32) {
    let mut mean = vec![0f64; FEATURES];
    let mut sq = vec![0f64; FEATURES];
    for r in x.chunks(FEATURES).take(n) {
        for (j, &v) in r.iter().enumerate() {
            mean[j] += v as f64;
            sq[j] += v as f64 * v as f64;
        }
    }
    let k = n.max(1) as f64;
    let m: Vec<f32> = mean.iter().map(|s| (s / k) as f32).collect();
    let sd: f64 = sq
        .iter()
        .zip(&mean)
        .map(|(q, s)| (q / k - (s / k).powi(2)).max(0.0).sqrt())
        .sum::<f64>()
        / FEATURES as f64;
    (m, sd.max(1e-6) as f32)
}

fn standardise(x: &mut [f32], mean: &[f32], scale: f32) {
    for r in x.chunks_mut(FEATURES) {
        for (v, m) in r.iter_mut().zip(mean) {
            *v = (*v - m) / scale;
        }
    }
}

/// The head trained on centred, scaled features folded back into one on raw features:
/// W′ = W/s, b′ = b − (μ/s)·W.
pub fn fold(w: &[f32], b: &[f32], mean: &[f32], scale: f32) -> (Vec<f32>, Vec<f32>) {
    let classes = b.len();
    let w2: Vec<f32> = w.iter().map(|v| v / scale).collect();
    let mut b2: Vec<f64> = b.iter().map(|&v| v as f64).collect();
    for (j, m) in mean.iter().enumerate() {
        for (c, bc) in b2.iter_mut().enumerate() {
            *bc -= *m as f64 * w2[j * classes + c] as f64;
        }
    }
    (w2, b2.into_iter().map(|v| v as f32).collect())
}

impl Probe {
    pub fn new(o: &WorkloadOptions) -> std::result::Result<Probe, super::Error> {
        let tr = subset(PANEL_TRAIN, o.samples, o.seed ^ 0xc1a55);
        let ho = subset(PANEL_HELDOUT, o.eval_samples, 1);
        let (mut xt, yt, st) = features("train", &tr)?;
        let (mut xh, yh, sh) = features("heldout", &ho)?;
        let (mean, scale) = moments(&xt, tr.len());
        standardise(&mut xt, &mean, scale);
        standardise(&mut xh, &mean, scale);
        Ok(Probe {
            train: Split {
                x: xt,
                y: yt,
                n: tr.len(),
                sha: st,
            },
            heldout: Split {
                x: xh,
                y: yh,
                n: ho.len(),
                sha: sh,
            },
            mean,
            scale,
        })
    }

    fn accuracy(&self, g: &Graph) -> Result<f64> {
        let d = &self.heldout;
        let mut right = 0usize;
        for chunk in (0..d.n).collect::<Vec<_>>().chunks(256) {
            let x = gather(&d.x, FEATURES, chunk, &[FEATURES], &g.device, g.dtype)?;
            let y = g.forward(&[("features", x)], &["logits"])?;
            let pred: Vec<u32> = y[0].argmax(1)?.to_vec1()?;
            right += chunk
                .iter()
                .zip(pred)
                .filter(|(i, p)| d.y[**i] == *p)
                .count();
        }
        Ok(right as f64 / d.n.max(1) as f64)
    }
}

impl Workload for Probe {
    /// The head alone: features → MatMul(fc.weight) + fc.bias → logits, its start the
    /// zoo's seeded `fc` (the same seed stream).
    fn model(&self) -> ModelProto {
        let mut n = crate::zoo::net::Net::new(NAME, DataType::FLOAT);
        let x = n.input("features", &[1, FEATURES as i64]);
        let logits = n.linear(&x, "fc", FEATURES as i64, CLASSES as i64);
        n.output(&logits, "logits", &[1, CLASSES as i64]);
        n.finish(17)
    }
    fn zoo_name(&self) -> &'static str {
        NAME
    }
    fn input_name(&self) -> &'static str {
        "features"
    }
    fn train_len(&self) -> usize {
        self.train.n
    }
    fn batch(&self, idx: &[usize], dev: &Device, dt: DType) -> Result<Batch> {
        let y: Vec<u32> = idx.iter().map(|&i| self.train.y[i]).collect();
        Ok(Batch {
            x: gather(&self.train.x, FEATURES, idx, &[FEATURES], dev, dt)?,
            y: Tensor::from_vec(y, idx.len(), dev)?,
        })
    }
    fn loss(&self, g: &Graph, b: &Batch) -> Result<Tensor> {
        let y = g.forward(&[("features", b.x.clone())], &["logits"])?;
        candle_nn::loss::cross_entropy(&y[0].to_dtype(DType::F32)?, &b.y)
    }
    fn objective(&self) -> Option<super::engine::Objective> {
        Some(super::engine::Objective {
            outputs: vec!["logits".into()],
            loss: super::engine::Loss::CrossEntropy,
        })
    }
    fn evaluate(&self, g: &Graph) -> Result<Evaluation> {
        let acc = self.accuracy(g)?;
        Ok(super::classify::against_majority(
            acc,
            &self.heldout.y,
            CLASSES,
        ))
    }
    fn saved_weights(&self, w: HashMap<String, Tensor>) -> Result<HashMap<String, Tensor>> {
        let (Some(wt), Some(bt)) = (w.get("fc.weight"), w.get("fc.bias")) else {
            candle_core::bail!("the head has no fc.weight or fc.bias");
        };
        let wv: Vec<f32> = wt.to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
        let bv: Vec<f32> = bt.to_dtype(DType::F32)?.to_vec1()?;
        let (w2, b2) = fold(&wv, &bv, &self.mean, self.scale);
        let mut out = HashMap::new();
        out.insert(
            "fc.weight".to_string(),
            Tensor::from_vec(w2, (FEATURES, CLASSES), &Device::Cpu)?,
        );
        out.insert(
            "fc.bias".to_string(),
            Tensor::from_vec(b2, CLASSES, &Device::Cpu)?,
        );
        Ok(out)
    }
    fn bytes_per_sample(&self) -> u64 {
        (FEATURES * 4) as u64
    }
    fn data(&self) -> Vec<DataRef> {
        super::classify::closeup_data(&self.train, &self.heldout)
    }
    fn default_batch(&self) -> usize {
        32
    }
    fn default_lr(&self) -> f64 {
        1e-3
    }
    fn recipe(&self) -> String {
        format!(
            "linear probe: the head (fc, {} parameters) trained on the seeded backbone's pooled features ({FEATURES} per close-up, 224×224 classification pre-processing, computed once on tract before the epochs), centred on the training split's per-feature mean and divided by one scale (the mean per-feature std), folded back into fc on saving; the backbone keeps its seeded weights (`zoo build` rebuilds them from the seed); cross-entropy; held out: top-1 accuracy vs the majority class",
            FEATURES * CLASSES + CLASSES
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folded_head_on_raw_features_gives_the_trained_logits() {
        let mut rng = crate::util::rng::SplitMix64(5);
        let n = 3;
        let raw: Vec<f32> = (0..n * FEATURES)
            .map(|_| 1.0 + rng.normal() as f32 * 0.2)
            .collect();
        let (mean, scale) = moments(&raw, n);
        let mut z = raw.clone();
        standardise(&mut z, &mean, scale);
        let w: Vec<f32> = (0..FEATURES * CLASSES)
            .map(|_| rng.normal() as f32 * 0.05)
            .collect();
        let b: Vec<f32> = (0..CLASSES).map(|_| rng.normal() as f32).collect();
        let (w2, b2) = fold(&w, &b, &mean, scale);
        let logits = |x: &[f32], w: &[f32], b: &[f32]| -> Vec<f64> {
            (0..CLASSES)
                .map(|c| {
                    b[c] as f64
                        + (0..FEATURES)
                            .map(|j| x[j] as f64 * w[j * CLASSES + c] as f64)
                            .sum::<f64>()
                })
                .collect()
        };
        for r in 0..n {
            let a = logits(&z[r * FEATURES..(r + 1) * FEATURES], &w, &b);
            let f = logits(&raw[r * FEATURES..(r + 1) * FEATURES], &w2, &b2);
            for (x, y) in a.iter().zip(&f) {
                assert!((x - y).abs() < 1e-3, "{x} vs {y}");
            }
        }
    }
}
