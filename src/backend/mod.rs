//! Backends: where a model runs. A [`Backend`] probes whether it can run here and loads a
//! model into a [`Session`]; a session runs one set of inputs and synchronises the device.
//!
//! The implementations are listed explicitly in [`registry`] (no registration before
//! `main`). A backend whose hardware or library is missing stays in the list and says
//! "not available: <reason>", like candle's stub devices. Owns: the traits, `--backend`
//! parsing, the timings every backend reports (§5.3: IR conversion, graph initialisation),
//! and operator placement records (§6.2 f). Leaves measurement policy to `measure`.

pub mod acl;
pub mod budget;
pub mod describe;
pub mod indices;
pub mod mock;
pub mod ort;
pub mod tch;
pub mod tract;
pub mod watchdog;

use std::collections::BTreeMap;
use std::path::Path;

pub use crate::report::schema::session::{
    Availability, CopyTimes, GraphOpt, LoadTimings, NodePlacement, Placement, SessionInfo,
};
pub use describe::{DeviceClass, PeakSource, Sensor, Traits, describe, describe_spec};

use crate::model::tensor::HostTensor;

/// `--backend NAME[:PROVIDER][@DEVICE]`, e.g. `cpu`, `ort:cuda@1`, `cuda@0`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSpec {
    pub backend: String,
    pub provider: Option<String>,
    pub device: Option<u32>,
}

impl std::str::FromStr for BackendSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (rest, device) = match s.rsplit_once('@') {
            Some((r, d)) => (
                r,
                Some(d.parse::<u32>().map_err(|_| {
                    format!("device '{d}' in '{s}' must be a number, e.g. ort:cuda@0")
                })?),
            ),
            None => (s, None),
        };
        let (backend, provider) = match rest.split_once(':') {
            Some((b, p)) if !p.is_empty() => (b, Some(p.to_ascii_lowercase())),
            Some((_, _)) => return Err(format!("'{s}' has an empty provider after ':'")),
            None => (rest, None),
        };
        if backend.is_empty() {
            return Err(format!(
                "'{s}' names no backend; try cpu, ort:cpu, ort:cuda, cuda"
            ));
        }
        Ok(BackendSpec {
            backend: backend.to_ascii_lowercase(),
            provider,
            device,
        })
    }
}

impl std::fmt::Display for BackendSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.backend)?;
        if let Some(p) = &self.provider {
            write!(f, ":{p}")?;
        }
        if let Some(d) = self.device {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Where and how a model runs, validated once from the command line (or a profile):
/// `--backend`, `--threads`, `--graph-opt`, `--ep-option KEY=VALUE`.
#[derive(Debug, Clone, PartialEq)]
pub struct BackendSettings {
    pub spec: BackendSpec,
    /// Intra-op threads (`None`: the engine's default).
    pub threads: Option<usize>,
    pub graph_opt: Option<GraphOpt>,
    /// Execution-provider options.
    pub ep_options: Vec<(String, String)>,
    /// `--load-timeout`: the longest a load may take, s (`None`: sized from the model).
    pub load_timeout_s: Option<f64>,
    /// `--run-timeout`: the longest one inference may take, s (`None`: sized from the model).
    pub run_timeout_s: Option<f64>,
}

impl BackendSettings {
    /// `spec` with the engine's defaults.
    pub fn new(spec: BackendSpec) -> BackendSettings {
        BackendSettings {
            spec,
            threads: None,
            graph_opt: None,
            ep_options: Vec::new(),
            load_timeout_s: None,
            run_timeout_s: None,
        }
    }

    /// The options to load a model with these settings at `input_shapes`.
    pub fn load_options(
        &self,
        input_shapes: Vec<(String, Vec<usize>)>,
        placement: bool,
    ) -> LoadOptions {
        LoadOptions {
            input_shapes,
            threads: self.threads,
            graph_opt: self.graph_opt,
            ep_options: self.ep_options.clone(),
            placement,
            load_timeout_s: self.load_timeout_s,
            run_timeout_s: self.run_timeout_s,
        }
    }
}

/// How to load a model.
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// Concrete shape of every model input (the backend pins dynamic dims to these).
    pub input_shapes: Vec<(String, Vec<usize>)>,
    /// Intra-op threads (`None`: the engine's default).
    pub threads: Option<usize>,
    pub graph_opt: Option<GraphOpt>,
    /// Execution-provider options, `--ep-option key=value`.
    pub ep_options: Vec<(String, String)>,
    /// Record which device each node ran on (engine profiling; adds overhead).
    pub placement: bool,
    /// The longest the engine's load may take, s (`None`: [`default_load_timeout`]).
    pub load_timeout_s: Option<f64>,
    /// The longest one inference may take, s (`None`: [`default_run_timeout`]).
    pub run_timeout_s: Option<f64>,
}

/// The load budget when none is given: 15 s, and 1 s more per 5 MB of model file (tract
/// loads and optimises ResNet-50's 100 MB in about 3 s on this 2-core machine).
pub fn default_load_timeout(model: &Path) -> std::time::Duration {
    let mb = std::fs::metadata(model).map_or(0, |m| m.len()) as f64 / 1e6;
    std::time::Duration::from_secs_f64(15.0 + mb / 5.0)
}

/// The run budget when none is given: 10 s, and 1 s more per 10^9 operations of one pass
/// through the model at the run's shapes ([`budget::check`]: `inspect`'s FLOPs and other
/// arithmetic, a loop's body once; a device as slow as 1 GFLOP/s still fits). A model
/// acceval cannot count gets the 10 s. The first run of a
/// device provider (TensorRT, CUDA, CANN, ...) gets [`FIRST_RUN_EXTRA`] more: engines build
/// or tune kernels then.
pub fn default_run_timeout(operations: Option<u64>) -> std::time::Duration {
    std::time::Duration::from_secs_f64(10.0 + operations.unwrap_or(0) as f64 / 1e9)
}

/// What the first run of a device provider adds to the default run budget, s.
pub const FIRST_RUN_EXTRA: std::time::Duration = std::time::Duration::from_secs(600);

/// Set when [`bounded`] abandoned a loading thread. That thread may still be inside the
/// engine's C++ code, so the process must not run the engine library's static destructors
/// at exit: ONNX Runtime 1.32 then died by a signal after printing the error (exit -1 in
/// tests/hostile_run.rs, 3 of 3 tries). The binary ends with `_exit` when this is set
/// ([`abandoned_load`]).
static ABANDONED_LOAD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a loading thread was abandoned in this process (see [`bounded`]).
pub fn abandoned_load() -> bool {
    ABANDONED_LOAD.load(std::sync::atomic::Ordering::SeqCst)
}

/// Runs `stage`, a part of a load the engine cannot interrupt, on its own thread, and waits
/// for it at most `limit`. Past it the thread is abandoned (it ends with the process, using a
/// core until then) and the error names `what`, the time and the flag.
pub fn bounded<T: Send + 'static>(
    engine: &str,
    what: &str,
    limit: std::time::Duration,
    stage: impl FnOnce() -> Result<T, String> + Send + 'static,
) -> Result<T, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("acceval-load".into())
        .spawn(move || {
            let r = crate::util::isolate::guard(stage).unwrap_or_else(|p| {
                Err(format!(
                    "the engine panicked on this model ({p}): the model is probably malformed; `acceval inspect` shows what it declares"
                ))
            });
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return Err(format!("cannot start the loading thread: {e}"));
    }
    match rx.recv_timeout(limit) {
        Ok(r) => r,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            ABANDONED_LOAD.store(true, std::sync::atomic::Ordering::SeqCst);
            // Whole seconds print as such ("2 s"); a sub-second budget keeps its digits.
            let secs = format!("{:.3}", limit.as_secs_f64());
            let secs = secs.trim_end_matches('0').trim_end_matches('.');
            Err(format!(
                "{what} did not finish within {secs} s (--load-timeout S; the default is 15 s + 1 s per 5 MB of model): {engine} cannot interrupt it, so acceval stopped waiting and abandoned the loading thread; the model is too large or too deep for {engine} (try another --backend) or needs a longer --load-timeout"
            ))
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            Err(format!("{what} ended without a result"))
        }
    }
}

impl Placement {
    /// Nodes per device.
    pub fn by_device(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for n in &self.nodes {
            *m.entry(n.device.clone()).or_insert(0) += 1;
        }
        m
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("unknown backend '{name}'; the backends are: {list}")]
    Unknown { name: String, list: String },
    #[error("backend '{backend}' is not available: {reason}")]
    NotAvailable { backend: String, reason: String },
    #[error("{backend} could not load '{model}': {reason}")]
    Load {
        backend: String,
        model: String,
        reason: String,
    },
    #[error("{backend} failed to run the model: {reason}")]
    Run { backend: String, reason: String },
}

/// A place models can run.
pub trait Backend: Sync {
    /// The name used in `--backend`.
    fn name(&self) -> &'static str;
    /// One line on what it is.
    fn summary(&self) -> &'static str;
    /// Whether it can run here, and why not.
    fn probe(&self) -> Availability;
    /// Providers this backend can select with `NAME:PROVIDER`, and their availability.
    fn providers(&self) -> Vec<(String, Availability)> {
        Vec::new()
    }
    /// What it says about itself for `b` (device class, route, sensor, peak, cross-check
    /// engine); `None` for a provider it does not have.
    fn describe(&self, b: &BackendSettings) -> Option<Traits>;
    /// Loads `model` for running.
    fn load(
        &self,
        model: &Path,
        spec: &BackendSpec,
        opts: &LoadOptions,
    ) -> Result<Box<dyn Session>, BackendError>;
}

/// One inference timed at the session boundary: the outputs on the host and the time from
/// the call to them, the device synchronised (§7.2.3's forward time).
pub struct Ran {
    pub outputs: Vec<HostTensor>,
    pub forward_ms: f64,
    /// The copies and the execution timed apart, where the session can (its
    /// `SessionInfo::copies` says how); they add up to `forward_ms`.
    pub copies: Option<CopyTimes>,
}

/// A model loaded on a backend.
pub trait Session {
    fn info(&self) -> &SessionInfo;
    fn timings(&self) -> &LoadTimings;
    /// Runs one inference; inputs in the model's input order. Returns when the outputs
    /// are on the host (device synchronised).
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError>;
    /// Waits for all queued device work (a no-op on the CPU).
    fn synchronize(&mut self) -> Result<(), BackendError>;
    /// Runs one inference and times it here, once: the clock stops after the device has
    /// synchronised. Callers read `forward_ms` and never time `synchronize` themselves.
    fn timed_run(&mut self, inputs: &[HostTensor]) -> Result<Ran, BackendError> {
        let t = std::time::Instant::now();
        let outputs = self.run(inputs)?;
        self.synchronize()?;
        Ok(Ran {
            outputs,
            forward_ms: t.elapsed().as_secs_f64() * 1e3,
            copies: None,
        })
    }
    /// Where each node ran, when `LoadOptions::placement` was set.
    fn placement(&mut self) -> Result<Placement, BackendError>;
    /// The inputs the loaded model takes, where the model file is one acceval does not read
    /// itself (an Ascend `.om`): the engine's own description. `None` for ONNX models, whose
    /// inputs acceval reads from the file before loading.
    fn declared_inputs(&self) -> Option<Vec<DeclaredInput>> {
        None
    }
    /// How another thread stops a run in flight, where the engine can (the run budget,
    /// [`watchdog`]); `None`: a run past its budget ends the process.
    fn interrupter(&self) -> Option<std::sync::Arc<dyn watchdog::Interrupt>> {
        None
    }
}

/// An input as a loaded model declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredInput {
    pub name: String,
    pub dtype: crate::model::onnx::DataType,
    /// The static shape; `None` where the model does not say (TorchScript declares neither
    /// shapes nor types: any given tensor is taken, a generated one needs its shape given).
    pub dims: Option<Vec<usize>>,
}

/// A model acceval runs on another engine than the one asked for, and which: a TorchScript
/// archive given to an ONNX engine.
pub fn wrong_format(model: &Path) -> Option<String> {
    tch::is_torchscript(model).then(|| {
        "this is a TorchScript model (a .pt zip archive), not ONNX: it runs on --backend tch (cargo feature tch), or export it to ONNX".to_string()
    })
}

/// Every backend acceval knows, in the order `devices` lists them. Adding a backend is a
/// file in this folder and a line here.
static REGISTRY: &[&dyn Backend] = &[
    &tract::CPU,
    &ort::ORT,
    &tract::CUDA,
    &acl::ACL,
    &tch::TCH,
    &mock::MOCK,
];

/// Every backend acceval knows, in the order `devices` lists them.
pub fn registry() -> &'static [&'static dyn Backend] {
    REGISTRY
}

/// The backend named `name`.
pub fn find(name: &str) -> Result<&'static dyn Backend, BackendError> {
    registry()
        .iter()
        .copied()
        .find(|b| b.name() == name)
        .ok_or_else(|| BackendError::Unknown {
            name: name.to_string(),
            list: registry()
                .iter()
                .map(|b| b.name())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Loads `model` on the backend of `spec`.
pub fn load(
    model: &Path,
    spec: &BackendSpec,
    opts: &LoadOptions,
) -> Result<Box<dyn Session>, BackendError> {
    let b = find(&spec.backend)?;
    let load_err = |reason: String| BackendError::Load {
        backend: spec.to_string(),
        model: model.display().to_string(),
        reason,
    };
    let operations = budget::check(model, &opts.input_shapes).map_err(load_err)?;
    let session = crate::util::isolate::guard(|| b.load(model, spec, opts))
        .map_err(|p| {
            load_err(format!(
                "the engine panicked on this model ({p}): the model is probably malformed; `acceval inspect` shows what it declares"
            ))
        })??;
    let (limit, first) = match opts.run_timeout_s {
        Some(s) => {
            let d = std::time::Duration::from_secs_f64(s);
            (d, d)
        }
        None => {
            let d = default_run_timeout(operations);
            let device = !matches!(spec.backend.as_str(), "cpu" | "mock")
                && spec.provider.as_deref() != Some("cpu");
            (d, if device { d + FIRST_RUN_EXTRA } else { d })
        }
    };
    let interrupt = session.interrupter();
    let engine = session.info().engine.clone();
    let given = opts.run_timeout_s.is_some();
    let fatal: watchdog::Fatal = Box::new(move |budget| {
        format!(
            "{} cannot interrupt a run, so acceval ended the process: {}",
            engine,
            overran(budget, given)
        )
    });
    let watch = watchdog::Watchdog::start(limit, first, interrupt, fatal).map_err(load_err)?;
    Ok(Box::new(Guarded {
        session,
        watch,
        given,
        indices: indices::guards(model, &spec.backend),
    }))
}

/// Why a run past its budget was stopped, and what to do.
fn overran(budget: std::time::Duration, given: bool) -> String {
    let secs = format!("{:.3}", budget.as_secs_f64());
    let secs = secs.trim_end_matches('0').trim_end_matches('.');
    let origin = if given {
        "--run-timeout"
    } else {
        "the default: 10 s + 1 s per 10^9 operations of one pass through the model, a loop's body counted once, + 600 s for a device provider's first run; --run-timeout S sets it"
    };
    format!(
        "one inference did not finish within {secs} s ({origin}); the model computes for too long at these inputs (a Loop's trip count, a huge graph) or needs a longer --run-timeout"
    )
}

/// A session whose engine calls cannot take the process down nor run without end: a panic
/// inside `run` (an engine's answer to a hostile model) is a run error, and every run is
/// watched against the run budget ([`watchdog`]).
struct Guarded {
    session: Box<dyn Session>,
    watch: watchdog::Watchdog,
    /// Whether the budget came from `--run-timeout` (else the default).
    given: bool,
    /// Graph inputs used as indices, checked before each run.
    indices: Vec<indices::IndexGuard>,
}

impl Guarded {
    /// `run` of the wrapped session on `inputs` under the guard and the watch, the indices
    /// checked first.
    fn guarded<T>(
        &mut self,
        inputs: &[HostTensor],
        run: impl FnOnce(&mut dyn Session) -> Result<T, BackendError>,
    ) -> Result<T, BackendError> {
        let backend = self.session.info().backend.clone();
        let engine = self.session.info().engine.clone();
        if !self.indices.is_empty() {
            indices::check(&self.indices, inputs).map_err(|reason| BackendError::Run {
                backend: backend.clone(),
                reason,
            })?;
        }
        let s = &mut self.session;
        let out = self
            .watch
            .run(|| crate::util::isolate::guard(|| run(s.as_mut())));
        match out {
            Ok(Ok(r)) => r,
            Ok(Err(p)) => Err(BackendError::Run {
                backend,
                reason: format!(
                    "the engine panicked running this model ({p}): the model or its inputs are probably malformed"
                ),
            }),
            Err((budget, _)) => Err(BackendError::Run {
                backend,
                reason: format!(
                    "{engine} stopped the run at acceval's request: {}",
                    overran(budget, self.given)
                ),
            }),
        }
    }
}

impl Session for Guarded {
    fn info(&self) -> &SessionInfo {
        self.session.info()
    }
    fn timings(&self) -> &LoadTimings {
        self.session.timings()
    }
    fn run(&mut self, inputs: &[HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        self.guarded(inputs, |s| s.run(inputs))
    }
    fn synchronize(&mut self) -> Result<(), BackendError> {
        self.session.synchronize()
    }
    fn timed_run(&mut self, inputs: &[HostTensor]) -> Result<Ran, BackendError> {
        self.guarded(inputs, |s| s.timed_run(inputs))
    }
    fn placement(&mut self) -> Result<Placement, BackendError> {
        self.session.placement()
    }
    fn declared_inputs(&self) -> Option<Vec<DeclaredInput>> {
        self.session.declared_inputs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_backend_specs() {
        let s: BackendSpec = "ort:CUDA@1".parse().unwrap();
        assert_eq!(s.backend, "ort");
        assert_eq!(s.provider.as_deref(), Some("cuda"));
        assert_eq!(s.device, Some(1));
        assert_eq!(s.to_string(), "ort:cuda@1");
        let s: BackendSpec = "cpu".parse().unwrap();
        assert_eq!((s.provider, s.device), (None, None));
        assert!("ort:".parse::<BackendSpec>().is_err());
        assert!("cuda@x".parse::<BackendSpec>().is_err());
        assert!("".parse::<BackendSpec>().is_err());
    }

    #[test]
    fn unknown_backend_lists_the_known_ones() {
        let e = find("tpu").err().unwrap().to_string();
        assert!(e.contains("cpu, ort, cuda, acl"), "{e}");
    }
}
