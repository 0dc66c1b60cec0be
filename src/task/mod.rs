//! Task pipelines: the pre- and post-processing around a model, which §7.2.3 times as
//! part of the module (pre-process, copy in, forward, copy out, post-process).
//!
//! Each stage has its own timer. Copy in/out happen inside the backend's `run` (tract and
//! ONNX Runtime hand back host tensors), so "forward" includes them.

pub mod classify;
pub mod detect;
pub mod forecast;
pub mod image;
pub mod inputs;

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::backend::Session;
use crate::backend::tensor::{HostTensor, TensorData};
use crate::model::zoo::Task;

/// What a pipeline needs to know about its model.
#[derive(Debug, Clone)]
pub struct TaskSpec {
    pub task: Task,
    pub input_name: String,
    /// The model input shape (NCHW for images, [1, steps, features] for series).
    pub input_shape: Vec<usize>,
    pub labels: Vec<String>,
    pub top_k: usize,
    pub detect: detect::DetectParams,
}

/// Per-stage wall-clock times of one pass, ms.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimes {
    /// Reading and decoding the file (image decode, CSV parse).
    pub decode_ms: f64,
    /// Resize/letterbox/normalise/NCHW, or windowing/normalising.
    pub preprocess_ms: f64,
    /// The backend's run: copy in, forward, copy out.
    pub forward_ms: f64,
    /// Softmax/top-k, box decoding + NMS, or de-normalisation.
    pub postprocess_ms: f64,
    /// All of the above (the §7.2.3 module time).
    pub total_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutput {
    Classes(Vec<classify::Class>),
    Detections(Vec<detect::Detection>),
    /// Forecast load, MW, one value per step.
    ForecastMw(Vec<f64>),
}

#[derive(Debug, Clone, Serialize)]
pub struct TaskRun {
    pub input: String,
    pub stages: StageTimes,
    pub output: TaskOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub letterbox: Option<image::Letterbox>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs the whole pipeline on one input file.
pub fn run(session: &mut dyn Session, spec: &TaskSpec, file: &Path) -> anyhow::Result<TaskRun> {
    let mut st = StageTimes::default();
    let t0 = Instant::now();
    let label = file.display().to_string();
    let (tensor, lb, norm) = match spec.task {
        Task::Classification | Task::Detection => {
            let t = Instant::now();
            let img = image::decode(file)?;
            st.decode_ms = ms(t);
            let t = Instant::now();
            let (h, w) = (spec.input_shape[2] as u32, spec.input_shape[3] as u32);
            let (x, lb) = if spec.task == Task::Detection {
                let (im, lb) = image::letterbox(&img, w.max(h));
                (
                    image::to_nchw(&im, image::UNIT_MEAN, image::UNIT_STD),
                    Some(lb),
                )
            } else {
                let im =
                    image::resize_center_crop(&img, (w as f64 * 256.0 / 224.0).round() as u32, w);
                (
                    image::to_nchw(&im, image::IMAGENET_MEAN, image::IMAGENET_STD),
                    None,
                )
            };
            st.preprocess_ms = ms(t);
            (x, lb, None)
        }
        Task::Forecasting => {
            let t = Instant::now();
            let rows = forecast::read_series(file)?;
            st.decode_ms = ms(t);
            let t = Instant::now();
            let n = forecast::norm(&rows);
            let x = forecast::window(&rows, spec.input_shape[1], &n)
                .map_err(|e| anyhow::anyhow!("series '{label}': {e}"))?;
            st.preprocess_ms = ms(t);
            (x, None, Some(n))
        }
    };
    let t = Instant::now();
    let outs = session.run(&[HostTensor {
        name: spec.input_name.clone(),
        data: TensorData::F32(tensor),
    }])?;
    session.synchronize()?;
    st.forward_ms = ms(t);
    let t = Instant::now();
    let first = outs
        .first()
        .ok_or_else(|| anyhow::anyhow!("the model returned no output"))?;
    let TensorData::F32(y) = &first.data else {
        anyhow::bail!(
            "output '{}' is {}, not FP32",
            first.name,
            first.data.dtype().name()
        );
    };
    let y: Vec<f32> = y.iter().copied().collect();
    let output = match spec.task {
        Task::Classification => TaskOutput::Classes(classify::top_k(&y, spec.top_k, &spec.labels)),
        Task::Detection => {
            let shape = first.data.shape();
            let classes = shape.get(1).copied().unwrap_or(4).saturating_sub(4);
            let lb = lb.ok_or_else(|| anyhow::anyhow!("no letterbox"))?;
            TaskOutput::Detections(detect::decode(&y, classes, &lb, &spec.labels, &spec.detect))
        }
        Task::Forecasting => {
            let n = norm.ok_or_else(|| anyhow::anyhow!("no normalisation"))?;
            TaskOutput::ForecastMw(forecast::denormalise(&y, &n))
        }
    };
    st.postprocess_ms = ms(t);
    st.total_ms = ms(t0);
    Ok(TaskRun {
        input: label,
        stages: st,
        output,
        letterbox: lb,
    })
}
