//! `lstm-load-forecast`: the zoo's 2-layer LSTM trained on the load series' training range
//! (`load-series-train`), windows of 96 steps → the next 24 normalised loads, MSE loss. The
//! held-out week is forecast as the task pipeline does it (the file normalised over
//! itself, the forecast denormalised), hourly forecast origins; its MAE in MW is compared
//! with the seasonal-naive forecast (the same time the day before).

use candle_core::{DType, Device, Result, Tensor};

use super::graph::Graph;
use super::workload::{Batch, Evaluation, Workload, WorkloadOptions, gather, subset};
use crate::model::onnx::ModelProto;
use crate::report::schema::train::{DataRef, HeldOut};
use crate::task::forecast::{self, Row};

const STEPS: usize = 96;
const FEATURES: usize = 8;
const HORIZON: usize = 24;
/// Every second step starts a training window.
const TRAIN_STRIDE: usize = 2;
/// Hourly forecast origins in the held-out week.
const EVAL_STRIDE: usize = 4;

pub struct LoadForecast {
    x: Vec<f32>,
    y: Vec<f32>,
    n: usize,
    heldout: Vec<Row>,
    eval_ends: Vec<usize>,
    data: Vec<DataRef>,
}

fn rows_of(name: &str, bytes: &[u8]) -> std::result::Result<Vec<Row>, super::Error> {
    Ok(forecast::parse_series(bytes, name)?)
}

/// (inputs, targets) of the windows ending at `ends` (normalised with `n`).
fn windows(
    rows: &[Row],
    ends: &[usize],
    n: &forecast::Norm,
) -> std::result::Result<(Vec<f32>, Vec<f32>), super::Error> {
    let mut x = Vec::with_capacity(ends.len() * STEPS * FEATURES);
    let mut y = Vec::with_capacity(ends.len() * HORIZON);
    for &end in ends {
        let w = forecast::window(&rows[..end], STEPS, n)?;
        x.extend(w.iter().copied());
        y.extend(
            rows[end..end + HORIZON]
                .iter()
                .map(|r| ((r.load - n.mean[0]) / n.std[0]) as f32),
        );
    }
    Ok((x, y))
}

impl LoadForecast {
    pub fn new(o: &WorkloadOptions) -> std::result::Result<LoadForecast, super::Error> {
        let files = crate::task::inputs::generate("load-series-train")
            .ok_or(super::Error::NoInputSet("load-series-train"))?;
        let train = rows_of(&files[0].0, &files[0].1)?;
        let heldout = rows_of(&files[1].0, &files[1].1)?;
        let norm = forecast::norm(&train);
        let ends: Vec<usize> = (STEPS..=train.len() - HORIZON)
            .step_by(TRAIN_STRIDE)
            .collect();
        let pick = subset(ends.len(), o.samples, o.seed ^ 0x5eed);
        let ends: Vec<usize> = pick.iter().map(|&i| ends[i]).collect();
        let (x, y) = windows(&train, &ends, &norm)?;
        // Held-out origins: the week after the history day (row 96 on).
        let eval: Vec<usize> = (STEPS..=heldout.len() - HORIZON)
            .step_by(EVAL_STRIDE)
            .collect();
        let pick = subset(eval.len(), o.eval_samples, 1);
        let eval_ends = pick.iter().map(|&i| eval[i]).collect();
        let data = files
            .iter()
            .zip([("train", ends.len()), ("held-out", pick.len())])
            .map(|((name, bytes, _), (split, n))| DataRef {
                split: split.into(),
                name: format!("load-series-train/{name}"),
                samples: n as u64,
                sha256: crate::util::fs::sha256_hex(bytes),
            })
            .collect();
        Ok(LoadForecast {
            n: ends.len(),
            x,
            y,
            heldout,
            eval_ends,
            data,
        })
    }
}

/// Mean absolute error of the model and of the seasonal-naive forecast on `rows` (the
/// windows ending at `ends`), MW.
fn held_out_mae(g: &Graph, rows: &[Row], ends: &[usize]) -> Result<(f64, f64)> {
    let n = forecast::norm(rows);
    let (x, _) = windows(rows, ends, &n).map_err(|e| candle_core::Error::Msg(e.to_string()))?;
    let xt = Tensor::from_vec(x, (ends.len(), STEPS, FEATURES), &g.device)?.to_dtype(g.dtype)?;
    let y = g.forward(&[("series", xt)], &["forecast"])?;
    let y: Vec<f32> = y[0].to_dtype(DType::F32)?.flatten_all()?.to_vec1()?;
    let (mut model, mut naive, mut count) = (0.0, 0.0, 0usize);
    for (k, &end) in ends.iter().enumerate() {
        let f = forecast::denormalise(&y[k * HORIZON..(k + 1) * HORIZON], &n);
        for h in 0..HORIZON {
            let actual = rows[end + h].load;
            model += (f[h] - actual).abs();
            naive += (rows[end + h - STEPS].load - actual).abs();
            count += 1;
        }
    }
    Ok((model / count as f64, naive / count as f64))
}

impl Workload for LoadForecast {
    fn model(&self) -> ModelProto {
        let (e, _) = crate::zoo::parse_name("lstm-load-forecast").expect("a zoo model");
        crate::zoo::build_graph(&e, crate::model::onnx::DataType::FLOAT)
    }
    fn zoo_name(&self) -> &'static str {
        "lstm-load-forecast"
    }
    fn input_name(&self) -> &'static str {
        "series"
    }
    fn train_len(&self) -> usize {
        self.n
    }
    fn batch(&self, idx: &[usize], dev: &Device, dt: DType) -> Result<Batch> {
        Ok(Batch {
            x: gather(&self.x, STEPS * FEATURES, idx, &[STEPS, FEATURES], dev, dt)?,
            y: gather(&self.y, HORIZON, idx, &[HORIZON], dev, dt)?,
        })
    }
    fn loss(&self, g: &Graph, b: &Batch) -> Result<Tensor> {
        let y = g.forward(&[("series", b.x.clone())], &["forecast"])?;
        candle_nn::loss::mse(&y[0], &b.y)
    }
    fn objective(&self) -> Option<super::engine::Objective> {
        Some(super::engine::Objective {
            outputs: vec!["forecast".into()],
            loss: super::engine::Loss::Mse,
        })
    }
    fn evaluate(&self, g: &Graph) -> Result<Evaluation> {
        let (mae, naive) = held_out_mae(g, &self.heldout, &self.eval_ends)?;
        Ok(Evaluation {
            held_out: HeldOut {
                metric: "mae_mw".into(),
                value: mae,
                baseline: "seasonal naive (the same time the day before)".into(),
                baseline_value: naive,
                beats_baseline: mae < naive,
                samples: self.eval_ends.len(),
            },
            lower_is_better: true,
        })
    }
    fn bytes_per_sample(&self) -> u64 {
        (STEPS * FEATURES * 4) as u64
    }
    fn data(&self) -> Vec<DataRef> {
        self.data.clone()
    }
    fn default_batch(&self) -> usize {
        64
    }
    fn default_lr(&self) -> f64 {
        2e-3
    }
    fn recipe(&self) -> String {
        format!(
            "windows of {STEPS} steps every {TRAIN_STRIDE} steps of the training range (normalised over it) → the next {HORIZON} normalised loads, MSE; held out: hourly origins of the held-out week, MAE in MW vs seasonal naive"
        )
    }
}
