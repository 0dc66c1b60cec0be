//! Conformance: an ONNX test-data suite through a backend.
//!
//! A suite is a folder of cases; a case is a folder with `model.onnx` and one or more
//! `test_data_set_N/` folders of `input_K.pb` / `output_K.pb` (serialised `TensorProto`s),
//! the layout of ONNX's backend node tests. Each case is loaded, run on every data set, and
//! compared with numpy's `allclose` rule. A case runs on its own thread with a time limit
//! and panics caught, so one bad case cannot stop the suite. [`Error`] says why a suite
//! could not be run at all; a case that cannot be read is a result (`bad_case`), not an error.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::time::{Duration, Instant};

use crate::accuracy::compare;
use crate::backend::{self, BackendSpec, LoadOptions};
use crate::data::io;
use crate::model::onnx::{DataType, OnnxFile};
use crate::model::tensor::HostTensor;
pub use crate::report::schema::conformance::{
    CaseResult, ConformanceReport as Report, Counts, Status, SuiteTypes,
};

impl Counts {
    pub(crate) fn add(&mut self, s: &Status) {
        self.cases += 1;
        if !matches!(s, Status::BadCase | Status::LoadFailed) {
            self.loaded += 1;
        }
        if matches!(s, Status::Passed | Status::Mismatch) {
            self.ran += 1;
        }
        if *s == Status::Passed {
            self.passed += 1;
        }
    }
    /// passed / cases.
    pub fn pass_rate(&self) -> Option<f64> {
        (self.cases > 0).then(|| self.passed as f64 / self.cases as f64)
    }
}

/// Settings of a conformance run.
/// Why a suite could not be run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read suite folder '{}': {err}", dir.display())]
    SuiteFolder { dir: PathBuf, err: std::io::Error },
    #[error(
        "'{}' holds no test case (a folder with model.onnx){}",
        dir.display(),
        filter.as_ref().map(|f| format!(" matching '{f}'")).unwrap_or_default()
    )]
    NoCases {
        dir: PathBuf,
        filter: Option<String>,
    },
}

pub struct Settings {
    pub spec: BackendSpec,
    pub load: LoadOptions,
    pub rtol: f64,
    pub atol: f64,
    pub types: SuiteTypes,
    pub filter: Option<String>,
    pub case_timeout: Duration,
}

struct Case {
    dir: PathBuf,
    name: String,
    op: String,
    fp32: bool,
}

fn describe(dir: &Path) -> Result<Case, String> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let f = OnnxFile::open(&dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let g = f.graph();
    let op = match g.node.as_slice() {
        [n] if n.domain.is_empty() || n.domain == "ai.onnx" => n.op_type.clone(),
        [n] => format!("{}::{}", n.domain, n.op_type),
        _ => "composite".into(),
    };
    let init: std::collections::HashSet<&str> =
        g.initializer.iter().map(|t| t.name.as_str()).collect();
    let fp32 = g
        .input
        .iter()
        .filter(|i| !init.contains(i.name.as_str()))
        .chain(g.output.iter())
        .all(|v| {
            v.tensor_type()
                .is_some_and(|t| DataType(t.elem_type) == DataType::FLOAT)
        });
    Ok(Case {
        dir: dir.to_path_buf(),
        name,
        op,
        fp32,
    })
}

fn data_sets(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("test_data_set_"))
        })
        .collect();
    v.sort();
    v
}

fn numbered(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter_map(|p| {
            let n = p.file_name()?.to_string_lossy().into_owned();
            let k = n.strip_prefix(prefix)?.strip_suffix(".pb")?.parse().ok()?;
            Some((k, p))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Runs one case (on the calling thread).
fn run_case(case: &Case, s: &Settings) -> (Status, Option<String>, Option<f64>) {
    let sets = data_sets(&case.dir);
    if sets.is_empty() {
        return (
            Status::BadCase,
            Some("no test_data_set_N folder".into()),
            None,
        );
    }
    let read = |p: &Path, prefix: &str| -> Result<Vec<HostTensor>, String> {
        numbered(p, prefix)
            .iter()
            .map(|f| {
                io::read_pb(f)
                    .map(|(name, data)| HostTensor { name, data })
                    .map_err(|e| e.to_string())
            })
            .collect()
    };
    let model_inputs = match crate::data::inputs::input_specs(&case.dir.join("model.onnx")) {
        Ok(v) => v,
        Err(e) => return (Status::BadCase, Some(format!("{e:#}")), None),
    };
    let first_inputs = match read(&sets[0], "input_") {
        Ok(v) => v,
        Err(e) => return (Status::BadCase, Some(e), None),
    };
    let mut load = s.load.clone();
    load.input_shapes = model_inputs
        .iter()
        .zip(&first_inputs)
        .map(|(spec, t)| (spec.name.clone(), t.data.shape().to_vec()))
        .collect();
    let mut session = match backend::load(&case.dir.join("model.onnx"), &s.spec, &load) {
        Ok(x) => x,
        Err(e) => return (Status::LoadFailed, Some(e.to_string()), None),
    };
    let mut worst = 0.0f64;
    for set in &sets {
        let (inputs, expected) = match (read(set, "input_"), read(set, "output_")) {
            (Ok(i), Ok(o)) => (i, o),
            (Err(e), _) | (_, Err(e)) => return (Status::BadCase, Some(e), None),
        };
        // The .pb files carry the model's input names; order them as the model does.
        let mut ordered = Vec::with_capacity(model_inputs.len());
        for (k, spec) in model_inputs.iter().enumerate() {
            let t = inputs
                .iter()
                .find(|t| t.name == spec.name)
                .or_else(|| inputs.get(k))
                .cloned();
            match t {
                Some(mut t) => {
                    t.name = spec.name.clone();
                    ordered.push(t);
                }
                None => {
                    return (
                        Status::BadCase,
                        Some(format!("no data for input '{}'", spec.name)),
                        None,
                    );
                }
            }
        }
        let outs = match session.run(&ordered) {
            Ok(o) => o,
            Err(e) => return (Status::RunFailed, Some(e.to_string()), None),
        };
        if outs.len() < expected.len() {
            return (
                Status::Mismatch,
                Some(format!(
                    "{} outputs, {} expected",
                    outs.len(),
                    expected.len()
                )),
                None,
            );
        }
        for (k, exp) in expected.iter().enumerate() {
            let got = outs.iter().find(|o| o.name == exp.name).unwrap_or(&outs[k]);
            match compare::compare(&got.data, &exp.data, s.rtol, s.atol) {
                Ok(d) => {
                    worst = worst.max(d.max_abs_diff);
                    if !d.passed() {
                        return (
                            Status::Mismatch,
                            Some(format!(
                                "output '{}': {} of {} elements outside rtol {} atol {} (max abs diff {:.3e})",
                                exp.name, d.mismatched, d.elements, s.rtol, s.atol, d.max_abs_diff
                            )),
                            Some(d.max_abs_diff),
                        );
                    }
                }
                Err(e) => {
                    return (
                        Status::Mismatch,
                        Some(format!("output '{}': {e}", exp.name)),
                        None,
                    );
                }
            }
            if got.data.dtype() != exp.data.dtype() {
                return (
                    Status::Mismatch,
                    Some(format!(
                        "output '{}' is {}, expected {}",
                        exp.name,
                        got.data.dtype().name(),
                        exp.data.dtype().name()
                    )),
                    Some(worst),
                );
            }
        }
    }
    (Status::Passed, None, Some(worst))
}

/// The test-case folders of `dir` (those holding model.onnx) whose name contains `filter`.
fn case_dirs(dir: &Path, filter: Option<&str>) -> Result<Vec<PathBuf>, Error> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|err| Error::SuiteFolder {
            dir: dir.to_path_buf(),
            err,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").is_file())
        .filter(|p| {
            filter.is_none_or(|f| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(f))
            })
        })
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(Error::NoCases {
            dir: dir.to_path_buf(),
            filter: filter.map(str::to_string),
        });
    }
    Ok(dirs)
}

/// One case on its own thread: an engine that panics or hangs fails the case, not the run.
fn run_isolated(case: Case, s: &Settings) -> CaseResult {
    let start = Instant::now();
    let settings = Settings {
        spec: s.spec.clone(),
        load: s.load.clone(),
        rtol: s.rtol,
        atol: s.atol,
        types: s.types,
        filter: None,
        case_timeout: s.case_timeout,
    };
    let (name, op) = (case.name.clone(), case.op.clone());
    let (status, reason, diff) =
        match crate::util::isolate::run(&format!("case-{name}"), s.case_timeout, move || {
            run_case(&case, &settings)
        }) {
            Ok(r) => r,
            Err(e @ crate::util::isolate::Isolated::TimedOut(_)) => {
                (Status::TimedOut, Some(e.to_string()), None)
            }
            Err(e) => (Status::RunFailed, Some(e.to_string()), None),
        };
    CaseResult {
        name,
        op,
        status,
        reason,
        max_abs_diff: diff,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Runs every case of the suite in `dir`; `progress(done, total)` after each.
pub fn run_suite(
    dir: &Path,
    s: &Settings,
    mut progress: impl FnMut(usize, usize),
) -> Result<Report, Error> {
    let t0 = Instant::now();
    let dirs = case_dirs(dir, s.filter.as_deref())?;
    let found = dirs.len();
    let mut cases = Vec::new();
    let mut results = Vec::new();
    for d in &dirs {
        match describe(d) {
            Ok(c) => cases.push(c),
            Err(e) => results.push(CaseResult {
                name: d
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                op: "?".into(),
                status: Status::BadCase,
                reason: Some(e),
                max_abs_diff: None,
                seconds: 0.0,
            }),
        }
    }
    let before = cases.len();
    if s.types == SuiteTypes::Fp32 {
        cases.retain(|c| c.fp32);
    }
    let skipped = before - cases.len();
    // Engines may panic on odd cases; keep the default hook from printing each one.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let total = cases.len();
    for (i, case) in cases.into_iter().enumerate() {
        results.push(run_isolated(case, s));
        progress(i + 1, total);
    }
    std::panic::set_hook(hook);
    results.sort_by(|a, b| a.name.cmp(&b.name));
    let mut totals = Counts::default();
    let mut by_op: BTreeMap<String, Counts> = BTreeMap::new();
    for r in &results {
        totals.add(&r.status);
        by_op.entry(r.op.clone()).or_default().add(&r.status);
    }
    let engine = backend::find(&s.spec.backend)
        .ok()
        .map(|b| b.probe().to_string());
    Ok(Report {
        schema: "acceval.conformance/1".into(),
        backend: s.spec.to_string(),
        engine,
        suite: dir.display().to_string(),
        rtol: s.rtol,
        atol: s.atol,
        types: s.types,
        cases_found: found,
        cases_skipped: skipped,
        pass_rate: totals.pass_rate(),
        totals,
        by_op,
        cases: results,
        seconds: t0.elapsed().as_secs_f64(),
        show_failures: false,
    })
}
