//! The conversion check (§5.3 a): a model and its conversion (a TorchScript model and its
//! ONNX export, say) run on the same seeded inputs, the source on its own framework (`tch`:
//! the model as the lab's framework runs it, which is the reference) and the conversion on
//! each engine asked for (`cpu`, `ort:cpu`, ...), every output graded with Table 3. A lab
//! learns whether the export preserved the model before any accelerator is measured on it.
//!
//! Outputs are matched by position (exporters rename them); inputs are generated at the
//! converted model's declared shapes (ONNX declares them; TorchScript does not) and given to
//! the source model by position.

use std::path::{Path, PathBuf};

use super::Error;
use super::metrics::{Accumulator, accumulate};
use crate::backend::{self, BackendSettings};
use crate::data::inputs::{gather_inputs, input_specs};
use crate::model::InputShape;
use crate::model::tensor::HostTensor;
use crate::report::schema::Verdict;
pub use crate::report::schema::accuracy::{ConversionReport, ConvertedEngine, ConvertedOutput};
use crate::standard::{Level, accuracy_level, accuracy_meets};

/// What a conversion check needs.
#[derive(Debug, Clone)]
pub struct ConversionSettings {
    /// The source model (e.g. `M.pt`) and the backend that runs it (e.g. `tch`).
    pub source: PathBuf,
    pub source_backend: BackendSettings,
    /// The converted model (e.g. `M.onnx`) and the engines that run it.
    pub converted: PathBuf,
    pub engines: Vec<BackendSettings>,
    /// Seeded input sets, and their shapes where the converted model's are dynamic.
    pub sets: usize,
    pub seed: u64,
    pub shapes: Vec<InputShape>,
    /// Compare the first output's arg-max per input (class scores).
    pub top1: bool,
    pub required: Option<Level>,
}

pub const DEFINITION: &str = "both models on the same seeded inputs; the source model's outputs on its own framework are the reference; per output, pooled over every input: MSE = Σ(converted − source)² / n, max abs error, relative L2 = ‖converted − source‖₂ / ‖source‖₂, cosine; Table 3 grades the worst output's MSE (C4 < 0.01, C3 < 0.1, C2 < 1, C1 < 10); outputs are matched by position";

fn run_all(
    model: &Path,
    b: &BackendSettings,
    sets: &[Vec<HostTensor>],
) -> Result<(crate::backend::SessionInfo, Vec<Vec<HostTensor>>), Error> {
    let shapes = sets
        .first()
        .map(|s| {
            s.iter()
                .map(|t| (t.name.clone(), t.data.shape().to_vec()))
                .collect()
        })
        .unwrap_or_default();
    let mut session = backend::load(model, &b.spec, &b.load_options(shapes, false))?;
    // The source model takes its inputs by position, under its own names.
    let names: Option<Vec<String>> = session
        .declared_inputs()
        .map(|d| d.into_iter().map(|i| i.name).collect());
    let mut outs = Vec::with_capacity(sets.len());
    for set in sets {
        let renamed: Vec<HostTensor> = match &names {
            Some(n) if n.len() == set.len() => set
                .iter()
                .zip(n)
                .map(|(t, name)| HostTensor {
                    name: name.clone(),
                    data: t.data.clone(),
                })
                .collect(),
            _ => set.clone(),
        };
        outs.push(session.timed_run(&renamed)?.outputs);
    }
    Ok((session.info().clone(), outs))
}

/// The index of the largest value.
fn argmax(t: &HostTensor) -> usize {
    let v = t.data.to_f64();
    v.iter()
        .enumerate()
        .fold((0, f64::NEG_INFINITY), |(bi, bv), (i, &x)| {
            if x > bv { (i, x) } else { (bi, bv) }
        })
        .0
}

/// One engine's outputs against the reference's.
fn grade(
    reference: &[Vec<HostTensor>],
    got: &[Vec<HostTensor>],
    s: &ConversionSettings,
) -> Result<(Vec<ConvertedOutput>, Option<f64>), Error> {
    let n = reference.first().map_or(0, Vec::len);
    let m = got.first().map_or(0, Vec::len);
    if n != m {
        return Err(Error::ConversionOutputs {
            source_outputs: n,
            converted: m,
        });
    }
    let mut outputs = Vec::with_capacity(n);
    for k in 0..n {
        let mut acc = Accumulator::default();
        for (r, g) in reference.iter().zip(got) {
            let a = accumulate(&g[k].data, &r[k].data).map_err(|err| Error::ConversionMetric {
                index: k,
                source_name: r[k].name.clone(),
                converted: g[k].name.clone(),
                err,
            })?;
            acc.merge(&a);
        }
        let metrics = acc.finish();
        outputs.push(ConvertedOutput {
            source: reference[0][k].name.clone(),
            converted: got[0][k].name.clone(),
            level: accuracy_level(metrics.mse),
            metrics,
        });
    }
    let top1 = (s.top1 && n > 0).then(|| {
        let same = reference
            .iter()
            .zip(got)
            .filter(|(r, g)| argmax(&r[0]) == argmax(&g[0]))
            .count();
        same as f64 / reference.len().max(1) as f64
    });
    Ok((outputs, top1))
}

/// Runs the check.
pub fn check(s: &ConversionSettings) -> Result<ConversionReport, Error> {
    let specs = input_specs(&s.converted)?;
    let (total, largest) = crate::data::inputs::planned_bytes(&specs, &s.shapes);
    let planned = (total.saturating_mul(s.sets.max(1) as u64), largest);
    backend::budget::check_before_generating(&s.converted, planned, &s.shapes).map_err(
        |reason| backend::BackendError::Load {
            backend: "every engine".into(),
            model: s.converted.display().to_string(),
            reason,
        },
    )?;
    let mut sets = Vec::with_capacity(s.sets);
    for k in 0..s.sets.max(1) {
        let (set, _) = gather_inputs(&specs, &[], &s.shapes, s.seed.wrapping_add(k as u64 * 1000))?;
        sets.push(set);
    }
    let (reference, ref_out) = run_all(&s.source, &s.source_backend, &sets)?;
    let mut engines = Vec::new();
    for b in &s.engines {
        let e = match run_all(&s.converted, b, &sets).and_then(|(info, got)| {
            grade(&ref_out, &got, s).map(|(outputs, top1)| (info, outputs, top1))
        }) {
            Ok((session, outputs, top1)) => {
                let worst = outputs
                    .iter()
                    .max_by(|a, b| a.metrics.mse.total_cmp(&b.metrics.mse));
                let mse = worst.map_or(0.0, |w| w.metrics.mse);
                let level = accuracy_level(mse);
                ConvertedEngine {
                    session,
                    worst_output: worst.map(|w| w.converted.clone()).unwrap_or_default(),
                    mse,
                    level,
                    top1_agreement: top1,
                    verdict: s.required.map(|r| {
                        if accuracy_meets(level, r) {
                            Verdict::Pass
                        } else {
                            Verdict::Fail
                        }
                    }),
                    outputs,
                    error: None,
                }
            }
            // An engine that cannot run the conversion is a finding, not the end of the check.
            Err(e) => ConvertedEngine {
                session: crate::backend::SessionInfo {
                    backend: b.spec.to_string(),
                    engine: String::new(),
                    device: String::new(),
                    library: None,
                    options: Default::default(),
                    emulated: None,
                    copies: None,
                },
                outputs: Vec::new(),
                mse: f64::NAN,
                worst_output: String::new(),
                level: None,
                top1_agreement: None,
                verdict: s.required.map(|_| Verdict::Fail),
                error: Some(e.to_string()),
            },
        };
        engines.push(e);
    }
    let sha = |p: &Path| -> Result<String, Error> {
        Ok(crate::util::fs::sha256_hex(
            &std::fs::read(p).map_err(crate::util::Error::read(p))?,
        ))
    };
    Ok(ConversionReport {
        schema: "acceval.conversion/1".into(),
        source: s.source.display().to_string(),
        source_sha256: sha(&s.source)?,
        converted: s.converted.display().to_string(),
        converted_sha256: sha(&s.converted)?,
        reference,
        inputs: format!(
            "{} seeded set(s) (seed {}, step 1000) at the converted model's declared input shapes",
            sets.len(),
            s.seed
        ),
        input_sets: sets.len(),
        definition: DEFINITION.into(),
        engines,
        required: s.required,
    })
}
