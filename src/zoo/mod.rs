//! The model zoo: the standard models of the four power scenarios, built deterministically.
//!
//! Every model is generated in code from a fixed seed (see `net`), so a file has the same
//! SHA-256 on every machine; `models/zoo.toml` records each file's hash, parameters and
//! MACs, and `zoo build` refuses to write a model whose hash differs from the manifest.
//! Files over 5 MB are not committed: they are built on demand, automatically the first
//! time a command names them (`resnet50-substation`). [`Error`] says why a model, its
//! weights or the manifest could not be had.

pub mod arch;
pub mod net;
pub mod yolo;

use std::path::{Path, PathBuf};

use prost::Message;

use crate::model::onnx::{DataType, ModelProto};

/// Why a zoo model, its weights or its manifest could not be had.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read weights '{}': {err}", path.display())]
    Weights {
        path: PathBuf,
        err: Box<candle_core::Error>,
    },
    #[error("weight '{name}': {err}")]
    Weight {
        name: String,
        err: Box<candle_core::Error>,
    },
    #[error("cannot read the zoo manifest '{}': {err}", path.display())]
    ManifestRead { path: PathBuf, err: std::io::Error },
    #[error("'{}' is not a valid zoo manifest: {err}", path.display())]
    ManifestParse {
        path: PathBuf,
        err: Box<toml::de::Error>,
    },
    #[error(
        "'{name}' has no entry in the zoo manifest; run `acceval zoo build --update-manifest {name}`"
    )]
    NotInManifest { name: String },
    #[error(
        "'{name}' built with SHA-256 {sha}, but models/zoo.toml records {recorded}: model generation is not reproducible on this machine (or the manifest is stale); report it with `acceval devices --json`"
    )]
    NotReproducible {
        name: String,
        sha: String,
        recorded: String,
    },
    #[error("model '{name}' is neither a file nor a zoo model; the zoo has: {known}")]
    Unknown { name: String, known: String },
    #[error("no input set '{0}'")]
    NoInputSet(String),
    #[error(transparent)]
    Files(#[from] crate::util::Error),
    #[error(transparent)]
    Analyse(#[from] crate::model::AnalyseError),
    #[error(transparent)]
    Task(#[from] crate::task::Error),
}

pub use crate::report::schema::zoo::{Manifest, ManifestModel};
pub use crate::report::schema::{Precision, Task};

/// The element type a variant stores its weights in.
fn dtype_of(p: Precision) -> DataType {
    match p {
        Precision::Fp32 | Precision::Int8 => DataType::FLOAT,
        Precision::Fp16 => DataType::FLOAT16,
    }
}

/// One architecture of the zoo.
pub struct Entry {
    pub name: &'static str,
    pub scenario: &'static str,
    pub task: Task,
    pub input: &'static str,
    pub input_shape: &'static [i64],
    pub architecture: &'static str,
    /// The reference numbers and how this model differs from them.
    pub reference: &'static str,
    pub labels: &'static [&'static str],
    /// The input set (see `task::inputs`) INT8 calibration runs on.
    pub input_set: &'static str,
    /// The labelled set its trained weights come from (INT8 calibration of a trained model
    /// runs on its training split).
    pub train_set: Option<&'static str>,
    build: fn(&str, DataType, Option<Init>) -> ModelProto,
}

/// The calibrated range of an activation: its min and max over the calibration inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    pub min: f32,
    pub max: f32,
}

/// Calibrated activation ranges, by value name.
pub type Calibration = std::collections::HashMap<String, Range>;

/// Trained weights by initializer name (FP32 values), from `models/weights/<name>.safetensors`.
pub type Trained = std::collections::HashMap<String, Vec<f32>>;

/// How a graph's weights are made: INT8 calibration, and trained values that replace the
/// seeded ones where they exist (by initializer name).
#[derive(Debug, Clone, Default)]
pub struct Init {
    pub quant: Option<Calibration>,
    pub trained: Option<Trained>,
}

/// The committed trained weights of a zoo architecture, when it has some.
pub fn weights_path(name: &str) -> PathBuf {
    crate::util::paths::models_dir()
        .join("weights")
        .join(format!("{name}.safetensors"))
}

/// Reads trained weights (safetensors; FP32 tensors by initializer name).
pub fn read_weights(path: &Path) -> Result<Trained, Error> {
    let t = candle_core::safetensors::load(path, &candle_core::Device::Cpu).map_err(|err| {
        Error::Weights {
            path: path.to_path_buf(),
            err: Box::new(err),
        }
    })?;
    weights_from_tensors(&t)
}

/// Tensors (any float type) → FP32 values by name.
pub fn weights_from_tensors(
    t: &std::collections::HashMap<String, candle_core::Tensor>,
) -> Result<Trained, Error> {
    let mut out = Trained::new();
    for (name, x) in t {
        let v: Vec<f32> = x
            .to_dtype(candle_core::DType::F32)
            .and_then(|x| x.flatten_all())
            .and_then(|x| x.to_vec1())
            .map_err(|err| Error::Weight {
                name: name.clone(),
                err: Box::new(err),
            })?;
        out.insert(name.clone(), v);
    }
    Ok(out)
}

/// The trained weights of `e` from the committed file, `None` when there is none (the
/// model keeps its seeded weights).
pub fn trained_weights(e: &Entry) -> Option<Trained> {
    let p = weights_path(e.name);
    p.exists().then(|| read_weights(&p)).and_then(|r| r.ok())
}

pub const LINE_CLASSES: [&str; 5] = [
    "insulator",
    "defective insulator",
    "bird nest",
    "foreign object",
    "damper",
];

pub const SUBSTATION_CLASSES: [&str; 10] = [
    "breaker open",
    "breaker closed",
    "disconnector open",
    "disconnector closed",
    "indicator lamp on",
    "indicator lamp off",
    "pressure plate on",
    "pressure plate off",
    "oil leak",
    "normal",
];

/// Every zoo architecture.
pub fn entries() -> Vec<Entry> {
    vec![
        Entry {
            name: "yolov8n-line",
            scenario: "line inspection, real time",
            task: Task::Detection,
            input: "images",
            input_shape: &[1, 3, 640, 640],
            architecture: "ultralytics YOLOv8n (depth 0.33, width 0.25), 5-class head, BatchNorm folded",
            reference: "ultralytics 8.4.190 DetectionModel('yolov8n.yaml'), fused: 3,151,904 parameters and 4,371,993,600 MACs at 640 with 80 classes (get_flops: 8.744 GFLOPs = 2 × MACs); with nc=5: 3,006,623 parameters (DFL's 16 included), 4,043,520,000 MACs. The ONNX file also stores the decoder's 25,201 constants (anchor points 2 × 8,400, strides 8,400, the scalar 2): 3,031,824 parameters",
            labels: &LINE_CLASSES,
            input_set: "line-inspection",
            train_set: Some("line-inspection-train"),
            build: |n, dt, i| yolo::LINE_N.graph(n, dt, i, yolo::LINE_N.side),
        },
        Entry {
            name: "yolov8s-line-hires",
            scenario: "line inspection, offline (high resolution)",
            task: Task::Detection,
            input: "images",
            input_shape: &[1, 3, 1280, 1280],
            architecture: "ultralytics YOLOv8s (depth 0.33, width 0.50), 5-class head, run at 1280×1280, BatchNorm folded",
            reference: "ultralytics 8.4.190 DetectionModel('yolov8s.yaml'), fused: 11,156,544 parameters and 14,301,312,000 MACs at 640 with 80 classes (28.6 GFLOPs); with nc=5 at 1280: 11,127,519 parameters, 56,882,688,000 MACs. The ONNX file also stores the decoder's 100,801 constants (anchor points 2 × 33,600, strides 33,600, the scalar 2): 11,228,320 parameters",
            labels: &LINE_CLASSES,
            input_set: "line-inspection-hires",
            train_set: Some("line-inspection-train"),
            build: |n, dt, i| yolo::LINE_S_HIRES.graph(n, dt, i, yolo::LINE_S_HIRES.side),
        },
        Entry {
            name: "resnet50-substation",
            scenario: "substation monitoring",
            task: Task::Classification,
            input: "input",
            input_shape: &[1, 3, 224, 224],
            architecture: "torchvision ResNet-50 v1.5, 10-class head, BatchNorm folded",
            reference: "ResNet-50: 25,557,032 parameters, 4,089,184,256 MACs at 224 (torchvision). Folding BatchNorm turns 2 × 26,560 BN parameters into 26,560 conv biases (−26,560); the 10-class head has 20,490 parameters instead of 2,049,000 and 20,480 MACs instead of 2,048,000: 23,501,962 parameters, 4,087,156,736 MACs",
            labels: &SUBSTATION_CLASSES,
            input_set: "substation",
            train_set: Some("substation-train"),
            build: |n, dt, i| arch::resnet50(n, dt, i, 10),
        },
        Entry {
            name: "mobilenetv2-meter",
            scenario: "substation edge / meter reading",
            task: Task::Classification,
            input: "input",
            input_shape: &[1, 3, 224, 224],
            architecture: "torchvision MobileNetV2 (width 1.0), 10-class head, BatchNorm folded",
            reference: "MobileNetV2: 3,504,872 parameters, 300,774,272 MACs at 224 (torchvision). Folding BatchNorm: −17,056; the 10-class head has 12,810 parameters instead of 1,281,000 and 12,800 MACs instead of 1,280,000: 2,219,626 parameters, 299,507,072 MACs; the ONNX file also stores the 35 ReLU6 Clip bounds (70 scalars, as torchvision's export does): 2,219,696",
            labels: &SUBSTATION_CLASSES,
            input_set: "substation",
            train_set: Some("substation-train"),
            build: |n, dt, i| arch::mobilenet_v2(n, dt, i, 10),
        },
        Entry {
            name: "lstm-load-forecast",
            scenario: "big-data analysis and forecasting",
            task: Task::Forecasting,
            input: "series",
            input_shape: &[1, 96, 8],
            architecture: "2-layer LSTM (hidden 128) over 96 steps × 8 features, last hidden state → 24-step load forecast",
            reference: "By construction: LSTM 1: 4·128·(8+128) weights + 8·128 biases = 70,656; LSTM 2: 4·128·256 + 1,024 = 132,096; head 128·24 + 24 = 3,096; 205,848 parameters. MACs: 96·4·128·136 + 96·4·128·256 + 128·24 = 19,270,656",
            labels: &[],
            input_set: "load-series",
            train_set: Some("load-series-train"),
            build: |n, dt, i| arch::lstm_forecast(n, dt, i, 96, 8, 128, 24),
        },
    ]
}

/// A zoo model name with its variant: `resnet50-substation`, `resnet50-substation-fp16`.
pub fn parse_name(full: &str) -> Option<(Entry, Precision)> {
    let full = canonical_name(full);
    let full = full.as_str();
    let (base, p) = if let Some(b) = full.strip_suffix("-fp16") {
        (b, Precision::Fp16)
    } else if let Some(b) = full.strip_suffix("-int8") {
        (b, Precision::Int8)
    } else {
        (full, Precision::Fp32)
    };
    entries()
        .into_iter()
        .find(|e| e.name == base)
        .map(|e| (e, p))
}

/// `resnet50-substation@int8` → `resnet50-substation-int8` (`@fp32` → the bare name);
/// other names unchanged.
pub fn canonical_name(name: &str) -> String {
    match name.rsplit_once('@') {
        Some((base, "fp32")) => base.to_string(),
        Some((base, p @ ("fp16" | "int8"))) => format!("{base}-{p}"),
        _ => name.to_string(),
    }
}

/// All model names, variants included.
pub fn all_names() -> Vec<String> {
    entries()
        .iter()
        .flat_map(|e| {
            [Precision::Fp32, Precision::Fp16, Precision::Int8]
                .map(|p| format!("{}{}", e.name, p.suffix()))
        })
        .collect()
}

/// Builds the serialised model: with its committed trained weights where it has them.
pub fn build(e: &Entry, p: Precision) -> Vec<u8> {
    build_with(e, p, trained_weights(e).as_ref())
}

/// The graph with seeded weights (what training starts from).
pub fn build_graph(e: &Entry, dt: DataType) -> ModelProto {
    (e.build)(e.name, dt, None)
}

/// Builds the serialised model with `trained` weights (seeded ones where `None`).
pub fn build_with(e: &Entry, p: Precision, trained: Option<&Trained>) -> Vec<u8> {
    // Weights are trained, else seeded by the architecture's name, so every precision
    // variant holds the same weights (rounded to its type).
    let calibration = (p == Precision::Int8).then(|| calibrate(e, trained));
    let init = Init {
        quant: calibration,
        trained: trained.cloned(),
    };
    let mut m = (e.build)(e.name, dtype_of(p), Some(init));
    if let Some(g) = m.graph.as_mut() {
        g.name = format!("{}{}", e.name, p.suffix());
    }
    // The zoo's format version, not acceval's: a new acceval release must not change the
    // bytes (and hashes) of unchanged models.
    m.producer_version = format!("zoo/{ZOO_VERSION}");
    m.encode_to_vec()
}

/// Bumped when model generation changes (and with it every hash in the manifest).
pub const ZOO_VERSION: u32 = 1;

/// The largest file committed to the repository.
pub const COMMIT_LIMIT_BYTES: u64 = 5_000_000;

impl Manifest {
    pub fn read(path: &Path) -> Result<Manifest, Error> {
        let text = std::fs::read_to_string(path).map_err(|err| Error::ManifestRead {
            path: path.to_path_buf(),
            err,
        })?;
        toml::from_str(&text).map_err(|err| Error::ManifestParse {
            path: path.to_path_buf(),
            err: Box::new(err),
        })
    }
    pub fn find(&self, name: &str) -> Option<&ManifestModel> {
        self.models.iter().find(|m| m.name == name)
    }
}

/// The comment at the top of `models/zoo.toml`.
pub const MANIFEST_HEADER: &str = "# The acceval model zoo: written by `acceval zoo build --update-manifest`.\n# Every model is generated from a fixed seed; `sha256` is the same on every machine and\n# `acceval zoo build` refuses a file that differs. params / macs are what `acceval inspect`\n# counts; `reference` says how they relate to the architecture's published numbers.\n\n";

/// The zoo entry and variant of a model file, when its name and SHA-256 are the zoo's.
pub fn identify(model: &Path) -> Option<(Entry, Precision)> {
    let stem = model.file_stem()?.to_str()?;
    let (entry, precision) = parse_name(stem)?;
    let manifest = Manifest::read(&crate::util::paths::models_dir().join("zoo.toml")).ok()?;
    let m = manifest.find(stem)?;
    file_matches(model, &m.sha256).then_some((entry, precision))
}

pub use crate::util::fs::file_matches;

/// Builds a model into `dir`, checks it against the manifest entry `expected` (unless
/// `update`), writes it atomically and returns its manifest line.
pub fn build_to(
    e: &Entry,
    p: Precision,
    dir: &Path,
    expected: Option<&ManifestModel>,
    update: bool,
) -> Result<ManifestModel, Error> {
    let name = format!("{}{}", e.name, p.suffix());
    let bytes = build(e, p);
    let sha = crate::util::fs::sha256_hex(&bytes);
    if !update {
        match expected {
            None => return Err(Error::NotInManifest { name }),
            Some(m) if m.sha256 != sha => {
                return Err(Error::NotReproducible {
                    name,
                    sha,
                    recorded: m.sha256.clone(),
                });
            }
            Some(_) => {}
        }
    }
    crate::util::create_dir_all(dir)?;
    let path = dir.join(format!("{name}.onnx"));
    crate::util::fs::write_file(&path, &bytes)?;
    let a = crate::model::analyse(&path, &[])?;
    Ok(ManifestModel {
        name: name.clone(),
        file: format!("{name}.onnx"),
        scenario: e.scenario.to_string(),
        task: e.task,
        precision: p,
        input: e.input.to_string(),
        input_shape: e.input_shape.to_vec(),
        architecture: e.architecture.to_string(),
        reference: e.reference.to_string(),
        labels: e.labels.iter().map(|s| s.to_string()).collect(),
        sha256: sha,
        bytes: bytes.len() as u64,
        params: a.params.count,
        params_bytes: a.params.bytes,
        macs: a.macs.unwrap_or(0),
        committed: (bytes.len() as u64) <= COMMIT_LIMIT_BYTES,
        training: training_record(e),
    })
}

/// The training record beside the committed weights (`models/weights/<name>.toml`), when
/// the weights are trained and the record matches them.
pub fn training_record(e: &Entry) -> Option<crate::report::schema::zoo::TrainingRecord> {
    let w = weights_path(e.name);
    let rec: crate::report::schema::zoo::TrainingRecord =
        toml::from_str(&std::fs::read_to_string(w.with_extension("toml")).ok()?).ok()?;
    let sha = crate::util::fs::sha256_hex(&std::fs::read(&w).ok()?);
    (rec.weights_sha256 == sha).then_some(rec)
}

/// The file for a model argument: the path itself when it exists; for a zoo name
/// (`resnet50-substation`, `…-fp16`), the model in `models/`, built (and checked against
/// the manifest) the first time it is needed.
pub fn resolve(arg: &Path) -> Result<PathBuf, Error> {
    if arg.exists() {
        return Ok(arg.to_path_buf());
    }
    let Some(name) = arg
        .to_str()
        .filter(|s| !s.contains('/') && !s.ends_with(".onnx"))
        .map(canonical_name)
    else {
        return Ok(arg.to_path_buf());
    };
    let name = name.as_str();
    let Some((entry, precision)) = parse_name(name) else {
        return Err(Error::Unknown {
            name: name.to_string(),
            known: all_names().join(", "),
        });
    };
    let dir = crate::util::paths::models_dir();
    let path = dir.join(format!("{name}.onnx"));
    let manifest = Manifest::read(&dir.join("zoo.toml"))?;
    let expected = manifest.find(name);
    if let Some(m) = expected
        && file_matches(&path, &m.sha256)
    {
        return Ok(path);
    }
    let bar = indicatif::ProgressBar::new_spinner();
    bar.set_message(format!(
        "building zoo model {name} ({} MB) into {}",
        expected.map(|m| m.bytes / 1_000_000).unwrap_or(0),
        dir.display()
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    let r = build_to(&entry, precision, &dir, expected, false);
    bar.finish_and_clear();
    r?;
    eprintln!("acceval: built zoo model {name} into {}", path.display());
    Ok(path)
}

/// Calibrates the INT8 variant: runs the FP32 model on its calibration inputs with every
/// Conv/MatMul input added as an output, and records each one's min and max (MinMax
/// calibration, as ONNX Runtime's `quantize_static` does by default).
pub fn calibrate(e: &Entry, trained: Option<&Trained>) -> Calibration {
    use crate::model::tensor::{HostTensor, TensorData};
    let init = Init {
        quant: None,
        trained: trained.cloned(),
    };
    let mut m = (e.build)(e.name, DataType::FLOAT, Some(init));
    let g = m.graph.as_mut().expect("zoo graphs exist");
    let mut names: Vec<String> = g
        .node
        .iter()
        .filter(|n| n.op_type == "Conv" || n.op_type == "MatMul")
        .filter_map(|n| n.input.first().cloned())
        .collect();
    names.sort();
    names.dedup();
    let originals = g.output.len();
    for n in &names {
        g.output.push(crate::model::onnx::ValueInfoProto {
            name: n.clone(),
            r#type: None,
        });
    }
    let dir = std::env::temp_dir().join(format!(
        "acceval-calibrate-{}-{}",
        e.name,
        std::process::id()
    ));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("calibrate.onnx");
    std::fs::write(&path, m.encode_to_vec()).expect("writing to the temporary folder");
    let shape: Vec<usize> = e.input_shape.iter().map(|&d| d as usize).collect();
    let opts = crate::backend::LoadOptions {
        input_shapes: vec![(e.input.to_string(), shape.clone())],
        ..Default::default()
    };
    let spec: crate::backend::BackendSpec = "cpu".parse().expect("valid spec");
    let mut session =
        crate::backend::load(&path, &spec, &opts).expect("the FP32 zoo model loads on tract");
    let mut ranges: Calibration = Calibration::new();
    for x in calibration_inputs(e, &shape, trained.is_some()) {
        let outs = session
            .run(&[HostTensor {
                name: e.input.to_string(),
                data: TensorData::F32(x),
            }])
            .expect("the FP32 zoo model runs on tract");
        for (name, t) in names.iter().zip(outs.iter().skip(originals)) {
            let (lo, hi) = t
                .data
                .to_f64()
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                    (lo.min(v), hi.max(v))
                });
            let r = ranges.entry(name.clone()).or_insert(Range {
                min: f32::INFINITY,
                max: f32::NEG_INFINITY,
            });
            r.min = r.min.min(lo as f32);
            r.max = r.max.max(hi as f32);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    ranges
}

/// Pre-processed calibration tensors (at most 4 images, or 8 windows): of the training
/// split for trained weights, else of the entry's input set.
fn calibration_inputs(e: &Entry, shape: &[usize], trained: bool) -> Vec<ndarray::ArrayD<f32>> {
    let files: Vec<(String, Vec<u8>)> = match e.train_set.filter(|_| trained) {
        Some(set) => crate::task::labelled::calibration_files(set, 4),
        None => crate::task::inputs::generate(e.input_set)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, bytes, _)| (name, bytes))
            .collect(),
    };
    let take = if e.task == Task::Forecasting { 8 } else { 4 };
    crate::task::prepare_inputs(e.task, shape, &files)
        .expect("the generated input set is valid")
        .into_iter()
        .take(take)
        .map(|p| p.tensor)
        .collect()
}

/// The entry's whole input set, pre-processed as its task pipeline does (every image; 8
/// windows of the series): the inputs of its references (`acceval reference`).
pub fn input_set_tensors(e: &Entry) -> Result<Vec<crate::task::PreparedInput>, Error> {
    let files: Vec<(String, Vec<u8>)> = crate::task::inputs::generate(e.input_set)
        .ok_or_else(|| Error::NoInputSet(e.input_set.to_string()))?
        .into_iter()
        .map(|(name, bytes, _)| (name, bytes))
        .collect();
    let shape: Vec<usize> = e.input_shape.iter().map(|&d| d as usize).collect();
    Ok(crate::task::prepare_inputs(e.task, &shape, &files)?)
}
