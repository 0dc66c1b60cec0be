//! Grading a backend's outputs against the FP32 CPU reference (§6.2 i, Table 3).
//!
//! Every output of every reference input is compared element by element; the sums are
//! pooled per output over all inputs (MSE = Σ(x − y)² / n over every element of every
//! input). The worst output's MSE is graded by Table 3. NaN or Inf anywhere fails,
//! whatever the MSE. Shapes and element types must equal the reference's: nothing is
//! broadcast or converted.

use std::path::Path;

use super::{Error, Setting};
use crate::accuracy::agreement::{self, Agreement};
use crate::accuracy::metrics::{self, Accumulator, ErrorMetrics};
use crate::accuracy::reference::{RefManifest, Reference, zoo_plan};
use crate::backend::{self, BackendSettings};
use crate::data::inputs::{check_input, input_specs};
use crate::measure::stats::Summary;
use crate::model::onnx::OnnxFile;
use crate::model::tensor::{HostTensor, TensorData};
use crate::report::schema::Verdict;
pub use crate::report::schema::accuracy::{
    AccuracyReport, DEFINITION, Independence, InputOutput, InputResult, Nonfinite, OutputResult,
    PrecisionTable, ReferenceInfo,
};
use crate::standard::{self, Level};
use crate::task::detect::DetectParams;
use crate::util::progress::Progress;
use crate::util::setting::SettingError;
use crate::zoo::{self, Task};

fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[i] = flat % d;
            flat /= d;
        }
    }
    idx
}

fn threshold_text(level: Option<Level>) -> String {
    match level {
        Some(Level::C4) => "MSE < 0.01 (C4, the strictest)".into(),
        Some(l) => {
            let stricter = match l {
                Level::C1 => Level::C2,
                Level::C2 => Level::C3,
                _ => Level::C4,
            };
            format!(
                "MSE < {} ({l}); {stricter} needs < {}",
                standard::accuracy_bound(l),
                standard::accuracy_bound(stricter)
            )
        }
        None => "MSE ≥ 10 or not finite: below C1 (< 10)".into(),
    }
}

/// The reference for `model` and how they relate; produced on first use for zoo models.
pub fn find_reference(
    model: &Path,
    explicit: Option<&Path>,
    b: &BackendSettings,
    progress: &Progress,
) -> Result<(Reference, String), Error> {
    let zoo = crate::zoo::identify(model);
    let dir = match (explicit, &zoo) {
        (Some(d), _) => d.to_path_buf(),
        (None, Some((e, _))) => crate::util::paths::references_dir().join(e.name),
        (None, None) => {
            return Err(SettingError::says(
                Setting::Reference,
                format!(
                    "is needed: '{}' is not a zoo model; give the FP32 model's reference folder (make it with `acceval reference --model FP32_MODEL.onnx --inputs ...`)",
                    model.display()
                ),
            )
            .into());
        }
    };
    if explicit.is_none() && !dir.join(crate::accuracy::reference::MANIFEST).is_file() {
        let (e, _) = zoo.as_ref().expect("zoo model");
        progress.note(format!(
            "acceval: no reference for {} in {}: computing it (FP32 on cpu, cross-checked on ort:cpu when installed, else on candle)",
            e.name,
            dir.display()
        ));
        let fp32 = zoo::resolve(Path::new(e.name))?;
        // The cross-check is on ONNX Runtime where it is installed; without it (a fresh
        // machine) on candle, the embedded engine that trains the zoo's graphs.
        let cpu: backend::BackendSpec = "cpu".parse().expect("valid");
        let cross = crate::accuracy::reference::other_engine_available(&cpu);
        if !cross {
            progress.note(format!(
                "acceval: ONNX Runtime is not installed: the reference of {} is cross-checked on candle instead",
                e.name
            ));
        }
        let mut plan = zoo_plan(e, &fp32, cpu, b.threads, cross)?;
        plan.cross_check_candle = !cross;
        crate::accuracy::reference::produce(&plan, &dir).map_err(|err| Error::Producing {
            model: e.name.to_string(),
            err: Box::new(err),
        })?;
    }
    let r = Reference::open(&dir)?;
    let sha = crate::util::fs::sha256_hex(&crate::util::read(model)?);
    let relation = match (&r.manifest, &zoo) {
        (Some(m), Some((e, p))) => {
            let manifest = zoo::Manifest::read(&crate::util::paths::models_dir().join("zoo.toml"))?;
            let want = manifest
                .find(e.name)
                .map(|x| x.sha256.clone())
                .unwrap_or_default();
            if m.model_sha256 != want {
                return Err(Error::OtherZooModel {
                    manifest: dir.join(crate::accuracy::reference::MANIFEST),
                    of_model: Box::new((m.model.clone(), m.model_sha256.clone())),
                    model: e.name.to_string(),
                    want_sha: want,
                });
            }
            format!(
                "zoo model {}{}: the reference's model is its FP32 original (SHA-256 checked)",
                e.name,
                p.suffix()
            )
        }
        (Some(m), None) if m.model_sha256 == sha => {
            "the reference's own model (SHA-256 equal)".to_string()
        }
        (Some(m), None) => format!(
            "a model other than the reference's {} (SHA-256 {}): a converted model, checked by input and output names and shapes",
            m.model_file, m.model_sha256
        ),
        (None, _) => match r.provenance.as_ref().and_then(|p| p.model_sha256.as_ref()) {
            Some(p) if *p == sha => {
                "the model its provenance.toml names (SHA-256 equal)".to_string()
            }
            Some(p) => format!(
                "a model other than the one its provenance.toml names (SHA-256 {p}): a converted model, checked by input and output names and shapes"
            ),
            None => "unknown: the folder has no acceval manifest, and no model_sha256 in a provenance.toml, so nothing ties it to a model".to_string(),
        },
    };
    Ok((r, relation))
}

/// Checks the reference's declared inputs and outputs against the model's.
fn check_structure(
    m: &RefManifest,
    dir: &Path,
    inputs: &[String],
    outputs: &[String],
) -> Result<(), Error> {
    let ri: Vec<&str> = m.inputs.iter().map(|d| d.name.as_str()).collect();
    let ro: Vec<&str> = m.outputs.iter().map(|d| d.name.as_str()).collect();
    if ri != inputs || ro != outputs {
        return Err(Error::OtherModel {
            manifest: dir.join(crate::accuracy::reference::MANIFEST),
            reference_io: format!("inputs [{}] and outputs [{}]", ri.join(", "), ro.join(", ")),
            model_io: format!(
                "inputs [{}] and outputs [{}]",
                inputs.join(", "),
                outputs.join(", ")
            ),
        });
    }
    Ok(())
}

/// How `evaluate` grades.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    /// Use only the first N inputs.
    pub limit: Option<usize>,
    /// The task, for decision agreement (zoo models know theirs).
    pub task: Option<Task>,
    /// Detection post-processing of the decision agreement.
    pub det: DetectParams,
    /// The Table 3 level required for PASS.
    pub required: Option<Level>,
    /// Grade only reference sets start..end of the used ones (a rank's shard of a cluster
    /// run, `accuracy --cluster`); all when None.
    pub shard: Option<std::ops::Range<usize>>,
}

/// What grading the inputs one by one gathered.
struct Pass {
    acc: Vec<Accumulator>,
    /// Element type and shape of each output.
    decl: Vec<(String, Vec<usize>)>,
    inputs: Vec<InputResult>,
    nonfinite: Vec<Nonfinite>,
    agreement: Option<Agreement>,
    times: Vec<f64>,
    error: Option<String>,
    /// The reference outputs of every graded input, for the null baselines.
    refs: Vec<Vec<TensorData>>,
}

/// How the model and its reference are laid out.
struct Layout<'a> {
    specs: &'a [crate::data::inputs::InputSpec],
    output_names: &'a [String],
    task: Option<Task>,
    det: &'a DetectParams,
    /// The image input's (width, height), for detection boxes.
    input_hw: (u32, u32),
}

/// The decision agreement of one input's outputs with the reference's.
fn agreement_of(l: &Layout, outs: &[HostTensor], refs: &[HostTensor]) -> Agreement {
    match (
        l.task,
        outs.first().map(|o| &o.data),
        refs.first().map(|o| &o.data),
    ) {
        (Some(Task::Classification), Some(TensorData::F32(a)), Some(TensorData::F32(r))) => {
            agreement::top1(a.as_slice().unwrap_or(&[]), r.as_slice().unwrap_or(&[]))
        }
        (Some(Task::Detection), Some(TensorData::F32(a)), Some(TensorData::F32(r)))
            if a.ndim() == 3 && a.shape()[1] > 4 =>
        {
            let classes = a.shape()[1] - 4;
            let a: Vec<f32> = a.iter().copied().collect();
            let r: Vec<f32> = r.iter().copied().collect();
            agreement::detection(&a, &r, classes, l.input_hw, l.det)
        }
        (Some(Task::Forecasting), Some(TensorData::F32(a)), Some(TensorData::F32(r))) => {
            let a: Vec<f32> = a.iter().copied().collect();
            let r: Vec<f32> = r.iter().copied().collect();
            agreement::forecast(&a, &r)
        }
        (None, _, _) => Agreement::NotApplicable {
            reason: "the task is unknown: give it".into(),
        },
        _ => Agreement::NotApplicable {
            reason: "the first output is not an FP32 tensor of the task's layout".into(),
        },
    }
}

/// Runs and grades reference input `k`.
fn grade_input(
    session: &mut dyn crate::backend::Session,
    reference: &Reference,
    l: &Layout,
    k: usize,
    rs: crate::accuracy::reference::RefSet,
    pass: &mut Pass,
) -> Result<InputResult, Error> {
    let set = set_name(reference, k);
    for (s, t) in l.specs.iter().zip(&rs.inputs) {
        check_input(
            s,
            &t.data,
            &format!("{}/input", reference.sets[k].display()),
        )?;
    }
    let ran = session.timed_run(&rs.inputs)?;
    let (outs, ms) = (ran.outputs, ran.forward_ms);
    if outs.len() != rs.outputs.len() {
        return Err(Error::OutputCount {
            got: outs.len(),
            set: reference.sets[k].clone(),
            want: rs.outputs.len(),
        });
    }
    let mut per = Vec::with_capacity(outs.len());
    for (j, (a, r)) in outs.iter().zip(&rs.outputs).enumerate() {
        if a.name != r.name {
            return Err(Error::OutputName {
                index: j,
                model_name: a.name.clone(),
                ref_name: r.name.clone(),
                set: reference.sets[k].clone(),
            });
        }
        let s = metrics::accumulate(&a.data, &r.data).map_err(|err| Error::Compare {
            output: a.name.clone(),
            err,
            set: reference.sets[k].clone(),
            index: j,
        })?;
        let m = s.finish();
        if let Some(i) = m.first_nonfinite {
            pass.nonfinite.push(Nonfinite {
                output: a.name.clone(),
                set: set.clone(),
                nan_count: m.nan_count,
                inf_count: m.inf_count,
                first_index: unravel(i as usize, a.data.shape()),
            });
        }
        pass.acc[j].merge(&s);
        pass.decl[j] = (a.data.dtype().name().to_string(), a.data.shape().to_vec());
        per.push(InputOutput {
            name: a.name.clone(),
            metrics: m,
        });
    }
    let worst = per.iter().map(|o| o.metrics.mse).fold(0.0f64, |a, b| {
        if b.is_nan() || a.is_nan() {
            f64::NAN
        } else {
            a.max(b)
        }
    });
    pass.refs
        .push(rs.outputs.iter().map(|o| o.data.clone()).collect());
    Ok(InputResult {
        source: reference
            .manifest
            .as_ref()
            .and_then(|m| m.sets.get(k))
            .map(|s| s.source.clone())
            .unwrap_or_else(|| set.clone()),
        set,
        mse: worst,
        level: standard::accuracy_level(worst),
        outputs: per,
        agreement: agreement_of(l, &outs, &rs.outputs),
        latency_ms: ms,
    })
}

/// `test_data_set_N` of input `k`.
fn set_name(reference: &Reference, k: usize) -> String {
    reference.sets[k]
        .file_name()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The pooled figures of each output.
fn outputs_of(names: &[String], pass: &Pass) -> Vec<OutputResult> {
    names
        .iter()
        .zip(&pass.acc)
        .zip(&pass.decl)
        .map(|((name, a), (t, s))| {
            let m = a.finish();
            OutputResult {
                name: name.clone(),
                elem_type: t.clone(),
                shape: s.clone(),
                level: standard::accuracy_level(m.mse),
                metrics: m,
            }
        })
        .collect()
}

/// PASS/FAIL and why: any NaN/Inf fails, so does an unfinished run; otherwise the
/// required level decides (no verdict when none is required).
fn verdict_of(
    pass: &Pass,
    required: Option<Level>,
    level: Option<Level>,
    mse: f64,
    worst: &str,
) -> (Option<Verdict>, Option<String>) {
    if let Some(n) = pass.nonfinite.first() {
        return (
            Some(Verdict::Fail),
            Some(format!(
                "output '{}' holds {} NaN and {} infinite values ({} at index {:?}, and {} input(s) in all)",
                n.output,
                n.nan_count,
                n.inf_count,
                n.set,
                n.first_index,
                pass.nonfinite.len()
            )),
        );
    }
    if pass.error.is_some() {
        return (Some(Verdict::Fail), Some("the run did not complete".into()));
    }
    let Some(req) = required else {
        return (None, None);
    };
    let bound = standard::accuracy_bound(req);
    if standard::accuracy_meets(level, req) {
        (
            Some(Verdict::Pass),
            Some(format!("MSE {mse:.4e} < {bound} ({req} required)")),
        )
    } else {
        (
            Some(Verdict::Fail),
            Some(format!(
                "MSE {mse:.4e} of output '{worst}' is not below {bound} ({req} required)"
            )),
        )
    }
}

/// What the report says about the reference.
fn reference_info(reference: &Reference, relation: String) -> ReferenceInfo {
    let m = reference.manifest.as_ref();
    ReferenceInfo {
        dir: reference.dir.display().to_string(),
        manifest: m.is_some(),
        model: m.map(|m| m.model.clone()),
        model_sha256: m.map(|m| m.model_sha256.clone()),
        engine: m
            .map(|m| format!("{} ({})", m.engine, m.backend))
            .or_else(|| reference.provenance.as_ref().map(|p| p.engine.clone())),
        created_utc: m.map(|m| m.created_utc.clone()),
        cross_check: m.map(|m| {
            if m.cross_check.outputs.is_empty() {
                m.cross_check.status.clone()
            } else {
                format!(
                    "{} with {} (max relative L2 {:.2e})",
                    m.cross_check.status,
                    m.cross_check.engine,
                    m.cross_check
                        .outputs
                        .iter()
                        .map(|o| o.max_rel_l2_error)
                        .fold(0.0, f64::max)
                )
            }
        }),
        relation,
        provenance: reference.provenance.clone(),
    }
}

/// The (width, height) of a model's NCHW image input, (0, 0) otherwise.
fn image_size(specs: &[crate::data::inputs::InputSpec]) -> (u32, u32) {
    specs
        .first()
        .and_then(|s| {
            let d: Vec<Option<i64>> = s.dims.iter().map(|d| d.known()).collect();
            match d.as_slice() {
                [_, _, Some(h), Some(w)] => Some((*w as u32, *h as u32)),
                _ => None,
            }
        })
        .unwrap_or((0, 0))
}

/// Runs and grades the first `used` reference inputs (`first` already loaded); an error
/// stops the pass and is kept in it.
fn grade_all(
    session: &mut dyn crate::backend::Session,
    reference: &Reference,
    layout: &Layout,
    range: std::ops::Range<usize>,
    first: crate::accuracy::reference::RefSet,
) -> Pass {
    let used = range.len();
    let n_out = layout.output_names.len();
    let n_in = layout.specs.len();
    let mut pass = Pass {
        acc: vec![Accumulator::default(); n_out],
        decl: vec![(String::new(), Vec::new()); n_out],
        inputs: Vec::with_capacity(used),
        nonfinite: Vec::new(),
        agreement: None,
        times: Vec::with_capacity(used),
        error: None,
        refs: Vec::with_capacity(used),
    };
    let mut next = Some(first);
    for k in range {
        let set = match next.take() {
            Some(s) => Ok(s),
            None => reference.load_set(k, n_in, n_out).map_err(Error::from),
        };
        match set.and_then(|rs| grade_input(session, reference, layout, k, rs, &mut pass)) {
            Ok(r) => {
                pass.times.push(r.latency_ms);
                match &mut pass.agreement {
                    Some(a) => a.merge(&r.agreement),
                    None => pass.agreement = Some(r.agreement.clone()),
                }
                pass.inputs.push(r);
            }
            Err(e) => {
                pass.error = Some(format!("{e:#}"));
                break;
            }
        }
    }
    pass
}

/// Grades `model` on the backend against `reference`. Errors before the first input are
/// returned; an error during the inputs is recorded in the report (`complete: false`).
pub fn evaluate(
    model: &Path,
    b: &BackendSettings,
    reference: &Reference,
    relation: String,
    opts: &EvalOptions,
) -> Result<AccuracyReport, Error> {
    evaluate_with_sums(model, b, reference, relation, opts).map(|(r, _)| r)
}

/// The reference sets this run grades: the first `--limit` of them, and of those this
/// rank's shard in a cluster run; none is an error naming the folder.
fn input_range(reference: &Reference, opts: &EvalOptions) -> Result<std::ops::Range<usize>, Error> {
    let available = reference.sets.len();
    let used = opts.limit.unwrap_or(available).min(available);
    let range = match &opts.shard {
        Some(r) => r.start.min(used)..r.end.min(used),
        None => 0..used,
    };
    if range.is_empty() {
        return Err(Error::EmptyReference {
            dir: reference.dir.clone(),
        });
    }
    Ok(range)
}

/// [`evaluate`], also returning each output's running sums (pooled over the ranks of a
/// cluster run by `merge`).
pub fn evaluate_with_sums(
    model: &Path,
    b: &BackendSettings,
    reference: &Reference,
    relation: String,
    opts: &EvalOptions,
) -> Result<
    (
        AccuracyReport,
        Vec<crate::report::schema::cluster::OutputSums>,
    ),
    Error,
> {
    let specs = input_specs(model)?;
    let output_names: Vec<String> = OnnxFile::open(model)?
        .graph()
        .output
        .iter()
        .map(|o| o.name.clone())
        .collect();
    let input_names: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    if let Some(m) = &reference.manifest {
        check_structure(m, &reference.dir, &input_names, &output_names)?;
    }
    let available = reference.sets.len();
    let range = input_range(reference, opts)?;
    let first = reference.load_set(range.start, specs.len(), output_names.len())?;
    let shapes = first
        .inputs
        .iter()
        .map(|t| (t.name.clone(), t.data.shape().to_vec()))
        .collect();
    let mut session = backend::load(model, &b.spec, &b.load_options(shapes, false))?;
    let layout = Layout {
        specs: &specs,
        output_names: &output_names,
        task: opts
            .task
            .or(crate::zoo::identify(model).map(|(e, _)| e.task)),
        det: &opts.det,
        input_hw: image_size(&specs),
    };
    // One untimed run first: the cold first inference is not a latency.
    session.run(&first.inputs).map_err(|err| Error::Run {
        model: model.to_path_buf(),
        spec: b.spec.to_string(),
        err: Box::new(err),
    })?;
    let mut pass = grade_all(session.as_mut(), reference, &layout, range, first);
    let sums = layout
        .output_names
        .iter()
        .zip(&pass.acc)
        .map(|(n, a)| a.sums(n))
        .collect();
    let outputs = outputs_of(layout.output_names, &pass);
    let worst = outputs
        .iter()
        .max_by(|a, b| {
            let key = |m: &ErrorMetrics| if m.mse.is_nan() { f64::INFINITY } else { m.mse };
            key(&a.metrics).total_cmp(&key(&b.metrics))
        })
        .ok_or_else(|| Error::NoOutput {
            model: model.to_path_buf(),
        })?;
    let mse = worst.metrics.mse;
    let level = if pass.nonfinite.is_empty() {
        standard::accuracy_level(mse)
    } else {
        None
    };
    let (mut verdict, mut verdict_reason) =
        verdict_of(&pass, opts.required, level, mse, &worst.name);
    let discrimination =
        crate::accuracy::nulls::discrimination(layout.output_names, &pass.refs, opts.required);
    if verdict == Some(Verdict::Pass) && discrimination.discriminating == Some(false) {
        verdict = Some(Verdict::Invalid);
        verdict_reason = discrimination.reason.clone();
    }
    let independence = independence_of(reference, &session.info().engine);
    let agreement = pass.agreement.take().unwrap_or(Agreement::NotApplicable {
        reason: "no input completed".into(),
    });
    Ok((
        AccuracyReport {
            schema: "acceval.accuracy/1".into(),
            model: model.display().to_string(),
            model_sha256: crate::util::fs::sha256_hex(&crate::util::read(model)?),
            precision: crate::zoo::identify(model).map(|(_, p)| p),
            session: session.info().clone(),
            reference: reference_info(reference, relation),
            definition: DEFINITION.into(),
            mse,
            worst_output: worst.name.clone(),
            level,
            threshold: threshold_text(level),
            required: opts.required,
            verdict,
            verdict_reason,
            agreement_text: agreement.text(),
            agreement,
            latency_ms: Summary::of(&pass.times),
            inputs_used: pass.inputs.len(),
            inputs_available: available,
            complete: pass.error.is_none(),
            error: pass.error,
            outputs,
            inputs: pass.inputs,
            nonfinite: pass.nonfinite,
            discrimination,
            independence,
        },
        sums,
    ))
}

/// An engine's family from its description: "onnxruntime 1.32.0" → onnxruntime; PyTorch,
/// torch and libtorch are one family, as are ONNX Runtime's spellings.
fn engine_family(engine: &str) -> String {
    let first = engine
        .split(|c: char| c.is_whitespace() || c == '/' || c == '(')
        .find(|w| !w.is_empty())
        .unwrap_or("")
        .to_ascii_lowercase();
    let compact: String = engine
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    if compact.starts_with("onnxruntime") || first == "ort" {
        "onnxruntime".into()
    } else if ["pytorch", "torch", "libtorch"].contains(&first.as_str()) {
        "torch".into()
    } else {
        first
    }
}

/// Whether the reference comes from another engine than `engine` (the one under test), or
/// was cross-checked against one: otherwise a fault of the engine would be in both.
pub fn independence_of(reference: &Reference, engine: &str) -> Independence {
    let Some(m) = &reference.manifest else {
        return match &reference.provenance {
            Some(p) if engine_family(&p.engine) != engine_family(engine) => Independence {
                independent: true,
                reason: format!(
                    "computed outside acceval on {}{} (its provenance.toml), not on {engine} (the engine under test)",
                    p.engine,
                    p.device
                        .as_ref()
                        .map(|d| format!(", {d}"))
                        .unwrap_or_default()
                ),
            },
            Some(p) => Independence {
                independent: false,
                reason: format!(
                    "its provenance.toml says it was computed on {}, the same engine as the one under test ({engine}): a fault of this engine would be in both; compute it on another engine",
                    p.engine
                ),
            },
            None => Independence {
                independent: false,
                reason: format!(
                    "unknown: the reference folder has neither acceval's manifest nor a {} naming the engine that computed it: add {}/{} with engine = \"NAME VERSION\" (and device), see docs/accuracy.md",
                    crate::accuracy::reference::PROVENANCE,
                    reference.dir.display(),
                    crate::accuracy::reference::PROVENANCE
                ),
            },
        };
    };
    let agreed = m.cross_check.status == "agreed";
    match (m.engine == engine, agreed) {
        (false, _) => Independence {
            independent: true,
            reason: format!(
                "computed on {}, not on {engine} (the engine under test)",
                m.engine
            ),
        },
        (true, true) => Independence {
            independent: true,
            reason: format!(
                "computed on {engine}, the engine under test, and cross-checked against {}",
                m.cross_check.engine
            ),
        },
        (true, false) => Independence {
            independent: false,
            reason: format!(
                "the reference was computed on {engine}, the engine under test, and not cross-checked ({}): a fault of this engine would be in both; install onnxruntime and recompute it (`acceval reference --model {}`)",
                m.cross_check.status, m.model
            ),
        },
    }
}
