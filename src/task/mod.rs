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
pub mod labelled;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::backend::{BackendError, Session};
use crate::model::tensor::{HostTensor, TensorData};
pub use crate::report::schema::Task;
pub use crate::report::schema::run::{StageTimes, TaskOutput, TaskRun};

/// Why a pipeline or an input set failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Image(#[from] image::ImageError),
    #[error(transparent)]
    Series(#[from] forecast::SeriesError),
    /// A series too short for the model's window.
    #[error("series '{label}': {err}")]
    Window {
        label: String,
        err: forecast::SeriesError,
    },
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
    /// A private temporary folder could not be made or written.
    #[error("cannot use a temporary folder '{}': {err}", path.display())]
    Temp { path: PathBuf, err: std::io::Error },
    #[error("the model returned no output")]
    NoOutput,
    #[error("output '{output}' is {dtype}, not FP32")]
    NotF32 { output: String, dtype: String },
    /// NaN or Inf in an output: a class, a box or a forecast read from it would be an
    /// answer the model never gave.
    #[error(
        "output '{output}' on '{input}' holds {nan} NaN and {inf} Inf of {values} values: the model or the backend computes garbage on this input (try the CPU backend to compare)"
    )]
    NotFinite {
        output: String,
        input: String,
        nan: usize,
        inf: usize,
        values: usize,
    },
    #[error("no input set '{name}'; the sets are: {sets}")]
    UnknownSet { name: String, sets: String },
    #[error("cannot write the manifest of input set '{set}': {err}")]
    Manifest { set: String, err: toml::ser::Error },
}

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

/// One model input made from a file of an input set by the task's pre-processing.
#[derive(Debug, Clone)]
pub struct PreparedInput {
    /// The file, and for series the window: `load-series.csv rows 2592..2688`.
    pub label: String,
    pub file: String,
    pub file_sha256: String,
    pub tensor: ndarray::ArrayD<f32>,
}

/// Windows taken from each series file (the last 96 steps, the 96 before them, ...).
pub const SERIES_WINDOWS: usize = 8;

/// The pre-processing of `task` in words (recorded in reference manifests).
pub fn preprocessing_text(task: Task) -> &'static str {
    match task {
        Task::Detection => {
            "decode; letterbox to the input size (Triangle filter, grey 114 padding); RGB/255; NCHW"
        }
        Task::Classification => {
            "decode; resize the short side to size*256/224 (Triangle), centre crop; (RGB/255 - ImageNet mean)/std; NCHW"
        }
        Task::Forecasting => {
            "parse CSV; standardise load/temperature/humidity over the series; time-of-day and weekday features; 8 windows of the input length, newest first"
        }
    }
}

/// Pre-processes in-memory files into model inputs of `shape`, as the task pipeline does:
/// each image gives one input; each series gives up to [`SERIES_WINDOWS`] windows.
pub fn prepare_inputs(
    task: Task,
    shape: &[usize],
    files: &[(String, Vec<u8>)],
) -> Result<Vec<PreparedInput>, Error> {
    let mut out = Vec::new();
    for (name, bytes) in files {
        let sha = crate::util::fs::sha256_hex(bytes);
        match task {
            Task::Forecasting => {
                let dir = tempfile_dir()?;
                let csv = dir.join("series.csv");
                std::fs::write(&csv, bytes).map_err(|err| Error::Temp {
                    path: csv.clone(),
                    err,
                })?;
                let rows = forecast::read_series(&csv);
                let _ = std::fs::remove_dir_all(&dir);
                let rows = rows.map_err(|e| Error::Window {
                    label: name.clone(),
                    err: e,
                })?;
                let n = forecast::norm(&rows);
                for k in 0..SERIES_WINDOWS {
                    let Some(end) = rows.len().checked_sub(k * shape[1]) else {
                        break;
                    };
                    if let Ok(t) = forecast::window(&rows[..end], shape[1], &n) {
                        out.push(PreparedInput {
                            label: format!("{name} rows {}..{end}", end - shape[1]),
                            file: name.clone(),
                            file_sha256: sha.clone(),
                            tensor: t,
                        });
                    }
                }
            }
            Task::Classification | Task::Detection => {
                let img = image::decode_bytes(bytes, name)?;
                let t = if task == Task::Detection {
                    image::letterbox_nchw(img, shape[3] as u32, image::UNIT_MEAN, image::UNIT_STD).0
                } else {
                    let short = (shape[3] as f64 * 256.0 / 224.0).round() as u32;
                    image::to_nchw(
                        &image::resize_center_crop(img, short, shape[3] as u32),
                        image::IMAGENET_MEAN,
                        image::IMAGENET_STD,
                    )
                };
                out.push(PreparedInput {
                    label: name.clone(),
                    file: name.clone(),
                    file_sha256: sha,
                    tensor: t,
                });
            }
        }
    }
    Ok(out)
}

/// A fresh private folder under the system's temporary directory.
fn tempfile_dir() -> Result<PathBuf, Error> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "acceval-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).map_err(|err| Error::Temp {
        path: d.clone(),
        err,
    })?;
    Ok(d)
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Runs the whole pipeline on one input file (reading it counts as decoding).
pub fn run(session: &mut dyn Session, spec: &TaskSpec, file: &Path) -> Result<TaskRun, Error> {
    let t = Instant::now();
    let label = file.display().to_string();
    let bytes = crate::util::read(file)?;
    let read_ms = ms(t);
    let mut r = run_bytes(session, spec, &label, &bytes)?;
    r.stages.decode_ms += read_ms;
    r.stages.total_ms += read_ms;
    Ok(r)
}

/// Runs the whole pipeline on a file already in memory (the benchmark's hot loop: no I/O).
pub fn run_bytes(
    session: &mut dyn Session,
    spec: &TaskSpec,
    label: &str,
    bytes: &[u8],
) -> Result<TaskRun, Error> {
    let p = prepare(spec, label, bytes)?;
    finish(session, spec, p)
}

/// An input decoded and pre-processed, waiting for the model: [`prepare`]'s half of
/// [`run_bytes`], so that a pipelined benchmark can prepare the next inputs on other threads
/// while the model runs this one.
pub struct Prepared {
    label: String,
    tensor: HostTensor,
    post: Post,
    stages: StageTimes,
    started: Instant,
}

/// Decodes and pre-processes one input (no model involved; any thread).
pub fn prepare(spec: &TaskSpec, label: &str, bytes: &[u8]) -> Result<Prepared, Error> {
    let mut st = StageTimes::default();
    let t0 = Instant::now();
    let (tensor, post) = match spec.task {
        Task::Classification | Task::Detection => {
            let t = Instant::now();
            let img = image::decode_bytes(bytes, label)?;
            st.decode_ms = ms(t);
            let t = Instant::now();
            let (h, w) = (spec.input_shape[2] as u32, spec.input_shape[3] as u32);
            let (x, post) = if spec.task == Task::Detection {
                let (x, lb) =
                    image::letterbox_nchw(img, w.max(h), image::UNIT_MEAN, image::UNIT_STD);
                (x, Post::Boxes(lb))
            } else {
                let im =
                    image::resize_center_crop(img, (w as f64 * 256.0 / 224.0).round() as u32, w);
                (
                    image::to_nchw(&im, image::IMAGENET_MEAN, image::IMAGENET_STD),
                    Post::Classes,
                )
            };
            st.preprocess_ms = ms(t);
            (x, post)
        }
        Task::Forecasting => {
            let t = Instant::now();
            let rows = forecast::parse_series(bytes, label)?;
            st.decode_ms = ms(t);
            let t = Instant::now();
            let n = forecast::norm(&rows);
            let x =
                forecast::window(&rows, spec.input_shape[1], &n).map_err(|err| Error::Window {
                    label: label.to_string(),
                    err,
                })?;
            st.preprocess_ms = ms(t);
            (x, Post::Forecast(n))
        }
    };
    Ok(Prepared {
        label: label.to_string(),
        tensor: HostTensor {
            name: spec.input_name.clone(),
            data: TensorData::F32(tensor),
        },
        post,
        stages: st,
        started: t0,
    })
}

/// Runs the model on a prepared input and post-processes its output; the stage times
/// include [`prepare`]'s, and the total runs from the start of `prepare`.
pub fn finish(session: &mut dyn Session, spec: &TaskSpec, p: Prepared) -> Result<TaskRun, Error> {
    let Prepared {
        label,
        tensor,
        post,
        stages: mut st,
        started: t0,
    } = p;
    let label = label.as_str();
    let ran = session.timed_run(std::slice::from_ref(&tensor))?;
    st.forward_ms = ran.forward_ms;
    st.copies = ran.copies;
    let outs = ran.outputs;
    let t = Instant::now();
    let first = outs.first().ok_or(Error::NoOutput)?;
    let TensorData::F32(y) = &first.data else {
        return Err(Error::NotF32 {
            output: first.name.clone(),
            dtype: first.data.dtype().name().to_string(),
        });
    };
    let y: Vec<f32> = y.iter().copied().collect();
    let (nan, inf) = y.iter().fold((0usize, 0usize), |(n, i), v| {
        (n + v.is_nan() as usize, i + v.is_infinite() as usize)
    });
    if nan + inf > 0 {
        return Err(Error::NotFinite {
            output: first.name.clone(),
            input: label.to_string(),
            nan,
            inf,
            values: y.len(),
        });
    }
    let (output, letterbox) = match post {
        Post::Classes => (
            TaskOutput::Classes(classify::top_k(&y, spec.top_k, &spec.labels)),
            None,
        ),
        Post::Boxes(lb) => {
            let shape = first.data.shape();
            let classes = shape.get(1).copied().unwrap_or(4).saturating_sub(4);
            (
                TaskOutput::Detections(detect::decode(
                    &y,
                    classes,
                    &lb,
                    &spec.labels,
                    &spec.detect,
                )),
                Some(lb),
            )
        }
        Post::Forecast(n) => (TaskOutput::ForecastMw(forecast::denormalise(&y, &n)), None),
    };
    st.postprocess_ms = ms(t);
    st.total_ms = ms(t0);
    Ok(TaskRun {
        input: label.to_string(),
        stages: st,
        output,
        letterbox,
    })
}

/// What the post-processing needs from the pre-processing.
enum Post {
    Classes,
    Boxes(image::Letterbox),
    Forecast(forecast::Norm),
}
