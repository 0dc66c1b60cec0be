//! The clause table and the verdict, from what the grade measured ([`Evidence`]). One
//! function per clause family; each returns its clauses and the reasons it fails, so a new
//! clause is one function and one line in [`judge`].

use std::path::PathBuf;

use crate::backend::{self, BackendSettings, Sensor};
use crate::device::telemetry::Kind;
use crate::grade::profile::{self, Profile};
use crate::model::Analysis;
use crate::report::schema::Verdict;
use crate::report::schema::accuracy::AccuracyReport;
use crate::report::schema::bench::BenchReport;
use crate::report::schema::devices::Devices;
use crate::report::schema::grade::{AccuracyError, Clause, Source, Stage, StageStatus};
use crate::report::schema::session::{DeviceClass, PlacementSummary};
use crate::standard::{self, Level};
use crate::util::fmt::{sci, thousands};
use crate::zoo::Precision;

/// A clause verdict that keeps a report from being COMPLIANT.
pub fn bad(v: Verdict) -> bool {
    matches!(v, Verdict::Fail | Verdict::Invalid | Verdict::Incomplete)
}

/// The report's verdict from its stages and clauses: INCOMPLETE when a stage did not finish
/// (or is missing), NOT COMPLIANT when a clause is FAIL, INVALID or INCOMPLETE, else
/// COMPLIANT. `verify` recomputes it from report.json the same way.
pub fn overall(p: &Profile, stages: &[Stage], clauses: &[Clause]) -> Verdict {
    let expected =
        4 + p.qps.is_some() as usize + p.llm.is_some() as usize + p.train.is_some() as usize;
    if stages.len() != expected || stages.iter().any(|s| s.status != StageStatus::Done) {
        Verdict::Incomplete
    } else if clauses.iter().any(|c| bad(c.verdict)) {
        Verdict::NotCompliant
    } else {
        Verdict::Compliant
    }
}

/// Everything a grade measured so far.
#[derive(Default)]
pub struct Evidence {
    pub stages: Vec<Stage>,
    pub devices: Option<Devices>,
    pub analysis: Option<Analysis>,
    pub model_path: Option<PathBuf>,
    pub accuracy: Vec<AccuracyReport>,
    pub accuracy_errors: Vec<AccuracyError>,
    pub speed: Option<BenchReport>,
    pub speed_model: Option<PathBuf>,
    pub placement: Option<PlacementSummary>,
    pub qps: Option<crate::report::schema::qps::QpsReport>,
    pub llm: Option<crate::report::schema::llm::LlmReport>,
    pub train: Option<crate::report::schema::train::TrainReport>,
}

/// The clause table and the verdict.
pub struct Judgement {
    pub clauses: Vec<Clause>,
    /// COMPLIANT, NOT COMPLIANT or INCOMPLETE.
    pub verdict: Verdict,
    pub reasons: Vec<String>,
}

/// The clauses one family adds, and why they fail the grade.
#[derive(Default)]
struct Found {
    clauses: Vec<Clause>,
    reasons: Vec<String>,
}

impl Found {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        clause: &str,
        title: &str,
        requirement: impl Into<String>,
        measured: impl Into<String>,
        verdict: Verdict,
        reason: Option<String>,
        source: Source,
    ) {
        self.clauses.push(Clause {
            clause: clause.into(),
            title: title.into(),
            requirement: requirement.into(),
            measured: measured.into(),
            verdict,
            reason,
            source,
        });
    }
}

fn na(why: &str) -> Option<String> {
    Some(why.to_string())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn opt(v: Option<f64>, unit: &str) -> String {
    v.map(|v| format!("{v:.3}{unit}"))
        .unwrap_or_else(|| "n/a".into())
}

/// The q-th percentile (0–100) of the end-to-end latencies, by the same rule as every other
/// percentile (linear interpolation): a profile may judge on any percentile, not only the
/// ones the summary holds.
pub fn percentile_of(b: &BenchReport, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = b.raw.iter().map(|x| x.total_ms).collect();
    v.sort_by(f64::total_cmp);
    crate::measure::stats::quantile_sorted(&v, q / 100.0)
}

/// The clause table and the verdict from what was measured.
pub fn judge(p: &Profile, b: &BackendSettings, e: &Evidence) -> Judgement {
    let backend = b.spec.to_string();
    let backend = backend.as_str();
    let families = [
        devices(b, e),
        framework(backend, e),
        precision(p, e),
        placement(b, e),
        tables(e),
        accuracy(p, e),
        agreement(p, e),
        attestations(p),
        model_support(backend, e),
        speed(p, e),
        qps(p, e),
        llm(p, e),
        telemetry(p, b, e),
        train(p, e),
    ];
    let mut clauses = Vec::new();
    let mut reasons = Vec::new();
    for f in families {
        // A family that fails a clause says why; one that gives no reason gets its clauses'.
        if f.reasons.is_empty() {
            for c in f.clauses.iter().filter(|c| bad(c.verdict)) {
                reasons.push(format!(
                    "{} {}: {}",
                    c.clause,
                    c.title,
                    c.reason.clone().unwrap_or_else(|| c.verdict.to_string())
                ));
            }
        }
        clauses.extend(f.clauses);
        reasons.extend(f.reasons);
    }
    let verdict = overall(p, &e.stages, &clauses);
    if verdict == Verdict::Incomplete {
        for s in e.stages.iter().filter(|s| s.status != StageStatus::Done) {
            reasons.insert(
                0,
                format!(
                    "stage {} {}{}",
                    s.name,
                    s.status,
                    s.error
                        .as_ref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ),
            );
        }
    }
    Judgement {
        clauses,
        verdict,
        reasons,
    }
}

/// The device the backend under test runs on, as identified: (what, identified?).
fn device_under_test(b: &BackendSettings, d: &Devices, engine: &str) -> (String, bool) {
    match backend::describe(b).class {
        DeviceClass::Cpu => (
            format!(
                "CPU {} ({} logical CPUs), {} {} kernel {}; runtime {engine}",
                d.host.cpu_model, d.host.logical_cpus, d.host.os, d.host.os_version, d.host.kernel
            ),
            !d.host.cpu_model.trim().is_empty() && !d.host.kernel.trim().is_empty(),
        ),
        DeviceClass::Gpu => {
            let i = match crate::util::cuda_pin::nvml_index(b.spec.device.unwrap_or(0)) {
                Ok(i) => i,
                Err(why) => return (why, false),
            };
            match d.nvidia.gpus.iter().find(|g| g.index == i) {
                Some(g) => (
                    format!(
                        "GPU {i} {} (UUID {}), driver {}, CUDA {}; runtime {engine}",
                        g.name,
                        g.uuid,
                        d.nvidia.driver_version.as_deref().unwrap_or("?"),
                        d.nvidia.cuda_driver_version.as_deref().unwrap_or("?")
                    ),
                    d.nvidia.driver_version.is_some(),
                ),
                None => (
                    format!(
                        "no NVIDIA GPU {i} found ({})",
                        d.nvidia
                            .not_available
                            .clone()
                            .unwrap_or_else(|| format!("{} GPU(s) listed", d.nvidia.gpus.len()))
                    ),
                    false,
                ),
            }
        }
        DeviceClass::Npu | DeviceClass::Asic | DeviceClass::Fpga | DeviceClass::Tpu => {
            match d.ascend.npus.first() {
                Some(n) => (
                    format!(
                        "NPU {}:{} {} {}, DCMI {}; runtime {engine}",
                        n.card_id,
                        n.device_id,
                        n.chip_type,
                        n.chip_name,
                        d.ascend.dcmi_version.as_deref().unwrap_or("?")
                    ),
                    !n.chip_name.trim().is_empty(),
                ),
                None => (
                    format!(
                        "no NPU found ({})",
                        d.ascend
                            .not_available
                            .clone()
                            .unwrap_or_else(|| "DCMI lists none".into())
                    ),
                    false,
                ),
            }
        }
        DeviceClass::Emulated => (
            "the mock backend: an emulated device, never certified".into(),
            false,
        ),
    }
}

/// §6 a, b (architecture), §6.2 a (OS), §6 c / §6.2 b (compute units), §6.2 c
/// (identification of the device under test).
fn devices(b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(d) = &e.devices else { return f };
    f.add(
        "§6 a, b",
        "Processor architecture",
        "report the processor architecture",
        format!(
            "{} ({}, {} logical CPUs)",
            d.host.arch, d.host.cpu_model, d.host.logical_cpus
        ),
        if d.host.arch.is_empty() {
            Verdict::Fail
        } else {
            Verdict::Pass
        },
        None,
        Source::Standard,
    );
    let os_known = !d.host.os.trim().is_empty() && !d.host.kernel.trim().is_empty();
    f.add(
        "§6.2 a",
        "Operating system",
        "should support Linux, Windows and embedded operating systems: report the one used",
        format!(
            "{} {} (kernel {})",
            d.host.os, d.host.os_version, d.host.kernel
        ),
        if os_known {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        (!os_known).then(|| "the operating system could not be identified".to_string()),
        Source::Standard,
    );
    let class = backend::describe(b).class;
    let dedicated = class.is_dedicated_ai_chip();
    f.add(
        "§6 c, §6.2 b",
        "Compute units",
        "inference supports at least one dedicated AI inference chip besides CPU/GPU",
        format!("the device under test: {class} ({})", b.spec),
        match class {
            _ if dedicated => Verdict::Pass,
            DeviceClass::Emulated => Verdict::Fail,
            _ => Verdict::NotApplicable,
        },
        match class {
            _ if dedicated => None,
            DeviceClass::Emulated => na("an emulated device is not a chip"),
            c => Some(format!(
                "the device under test is a {c}; §6.2 b concerns a dedicated AI inference chip (NPU, ASIC, FPGA, TPU), which this run does not certify"
            )),
        },
        Source::Standard,
    );
    let engine = e
        .speed
        .as_ref()
        .map(|s| s.session.engine.clone())
        .or_else(|| e.accuracy.first().map(|a| a.session.engine.clone()))
        .unwrap_or_else(|| "not loaded".into());
    let (what, identified) = device_under_test(b, d, &engine);
    let container = if d.host.container.in_container {
        d.host
            .container
            .runtime
            .clone()
            .unwrap_or_else(|| "yes".into())
    } else {
        "no".into()
    };
    f.add(
        "§6.2 c",
        "Device identification",
        "the device under test is identified (name, driver and runtime versions); container mapping supported",
        format!("{what}; container: {container}"),
        if identified {
            Verdict::Pass
        } else {
            Verdict::Fail
        },
        (!identified).then(|| format!("the device the backend runs on was not identified: {what}")),
        Source::Standard,
    );
    if !identified {
        f.reasons
            .push(format!("device identification (§6.2 c): {what}"));
    }
    f
}

/// §6 d: the framework (the model's format and the engine running it).
fn framework(backend: &str, e: &Evidence) -> Found {
    let mut f = Found::default();
    let engine = e
        .speed
        .as_ref()
        .map(|s| s.session.engine.clone())
        .or_else(|| e.accuracy.first().map(|a| a.session.engine.clone()))
        .unwrap_or_else(|| backend.to_string());
    let inspected = e.analysis.is_some();
    f.add(
        "§6 d",
        "Framework",
        "at least one of TensorFlow, PyTorch, Caffe, MXNet, ONNX, MindSpore, Paddle",
        format!("ONNX model on {engine}"),
        if inspected {
            Verdict::Pass
        } else {
            Verdict::NotApplicable
        },
        if inspected {
            None
        } else {
            na("the model was not inspected")
        },
        Source::Standard,
    );
    f
}

/// The accuracy result of a precision (`fp32`, `fp16`, `int8`).
fn graded(e: &Evidence, precision: Precision) -> Option<&AccuracyReport> {
    e.accuracy.iter().find(|a| a.precision == Some(precision))
}

/// §6 e: INT8 and FP16 inference.
fn precision(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let ran = |prec| graded(e, prec).is_some_and(|a| a.complete);
    let asked = |prec| p.model.precisions.contains(&prec);
    let ok = ran(Precision::Int8) && ran(Precision::Fp16);
    let both = asked(Precision::Int8) && asked(Precision::Fp16);
    let list: Vec<String> = e
        .accuracy
        .iter()
        .map(|a| {
            format!(
                "{} ({})",
                a.precision.map(|x| x.to_string()).unwrap_or_default(),
                a.level
                    .map(|l| l.to_string())
                    .unwrap_or_else(|| "below C1".into())
            )
        })
        .collect();
    f.add(
        "§6 e",
        "Precision",
        "inference supports INT8 and FP16",
        format!("graded: {}", list.join(", ")),
        match (ok, both) {
            (true, _) => Verdict::Pass,
            (false, true) => Verdict::Fail,
            (false, false) => Verdict::NotApplicable,
        },
        match (ok, both) {
            (true, _) => None,
            (false, true) => na("a variant did not run to the end"),
            (false, false) => na("the profile does not grade both INT8 and FP16"),
        },
        Source::Standard,
    );
    f
}

/// §6.2 f: operator placement and fallback; §6 g: the operator-adaptation route.
fn placement(b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let traits = backend::describe(b);
    let class = traits.class;
    let Some(s) = &e.placement else {
        f.add(
            "§6.2 f",
            "Operator placement and fallback",
            "report which operators ran on the accelerator and which fell back to the CPU",
            "not recorded",
            if class == DeviceClass::Cpu {
                Verdict::NotApplicable
            } else {
                Verdict::Incomplete
            },
            na("the speed stage did not run"),
            Source::Standard,
        );
        let (route, detail) = (traits.route, traits.route_detail);
        f.add(
            "§6 g",
            "Operator adaptation",
            "operator mapping, subgraph or whole-graph hand-off, or a compiler back end",
            format!("{route}: {detail}"),
            if class == DeviceClass::Cpu {
                Verdict::NotApplicable
            } else {
                Verdict::Incomplete
            },
            na("no placement was recorded, so no operator was seen running on the device under test"),
            Source::Standard,
        );
        return f;
    };
    let line = crate::report::run::placement_line(s);
    let (verdict, reason) = match (&s.unavailable, class) {
        (_, DeviceClass::Cpu) if s.fused_subgraphs.is_empty() && s.cpu_fallback.is_empty() => (
            Verdict::NotApplicable,
            Some(format!(
                "the backend under test ({}) is the CPU: every operator runs on it",
                b.spec
            )),
        ),
        (Some(why), DeviceClass::Emulated) => (Verdict::Fail, Some(why.clone())),
        (Some(why), _) => (
            Verdict::Incomplete,
            Some(format!("the backend could not report placement: {why}")),
        ),
        (None, _) => (Verdict::Pass, None),
    };
    if verdict == Verdict::Incomplete {
        f.reasons.push(format!("placement (§6.2 f): {line}"));
    }
    f.add(
        "§6.2 f",
        "Operator placement and fallback",
        "report which operators ran on the accelerator and which fell back to the CPU",
        line,
        verdict,
        reason,
        Source::Standard,
    );
    // §6 g: evidence for the route is operators that ran on the device under test.
    let evidence = s.nodes_on_device.unwrap_or(0) > 0 && s.unavailable.is_none();
    let (verdict, reason) = match class {
        DeviceClass::Emulated => (
            Verdict::Fail,
            na("an emulated device has no adaptation layer"),
        ),
        DeviceClass::Cpu if s.fused_subgraphs.is_empty() => (
            Verdict::NotApplicable,
            Some(format!(
                "the backend under test ({}) is a CPU engine",
                b.spec
            )),
        ),
        _ if evidence => (Verdict::Pass, None),
        _ => (
            Verdict::Incomplete,
            na("no operator was seen running on the device under test"),
        ),
    };
    f.add(
        "§6 g",
        "Operator adaptation",
        "operator mapping, subgraph or whole-graph hand-off, or a compiler back end",
        format!("{}: {}", s.route, s.route_detail),
        verdict,
        reason,
        Source::Standard,
    );
    f
}

/// §6.2 h: Tables 1 and 2.
fn tables(e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(a) = &e.analysis else { return f };
    let t1 = standard::size_level(mb(a.params.bytes));
    let t2 = a.gflops.and_then(standard::size_level);
    let name = |l: Option<Level>| {
        l.map(|l| l.to_string())
            .unwrap_or_else(|| "no level".into())
    };
    f.add(
        "§6.2 h",
        "Model size (Table 1)",
        "grade the parameter size: C1 ≥ 1000 MB, C2 ≥ 100, C3 ≥ 10, C4 > 0",
        format!(
            "{} parameters, {:.3} MB → {}",
            thousands(a.params.count),
            mb(a.params.bytes),
            name(t1)
        ),
        Verdict::Pass,
        None,
        Source::Standard,
    );
    f.add(
        "§6.2 h",
        "Compute (Table 2)",
        "grade the FLOPs: C1 ≥ 1000 G, C2 ≥ 100, C3 ≥ 10, C4 > 0",
        match (a.macs, a.gflops) {
            (Some(m), Some(g)) => format!("{} MACs, {g:.3} GFLOPs → {}", thousands(m), name(t2)),
            _ => "n/a: MACs not computed".into(),
        },
        if a.gflops.is_some() {
            Verdict::Pass
        } else {
            Verdict::NotApplicable
        },
        if a.gflops.is_some() {
            None
        } else {
            a.macs_unavailable.clone()
        },
        Source::Standard,
    );
    f
}

/// The clause of one graded precision: PASS only when the grade passed, its reference can
/// tell a broken device from a working one, and the reference is independent of the engine.
fn accuracy_verdict(a: &AccuracyReport) -> (String, Verdict, Option<String>) {
    let level = a
        .level
        .map(|l| l.to_string())
        .unwrap_or_else(|| "below C1".into());
    let measured = format!(
        "MSE {} (output '{}') → {level}; decision: {}",
        sci(a.mse),
        a.worst_output,
        a.agreement_text
    );
    match a.verdict {
        Some(Verdict::Pass) if a.independence.independent => (measured, Verdict::Pass, None),
        Some(Verdict::Pass) => (
            measured,
            Verdict::Invalid,
            Some(format!(
                "reference not independent: {}",
                a.independence.reason
            )),
        ),
        Some(Verdict::Invalid) => (measured, Verdict::Invalid, a.verdict_reason.clone()),
        _ => (
            format!("MSE {} → {level}", sci(a.mse)),
            Verdict::Fail,
            a.verdict_reason.clone().or(a.error.clone()),
        ),
    }
}

/// §6.2 i: Table 3 against Table 4, per graded precision.
fn accuracy(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    for &prec in &p.model.precisions {
        let a = graded(e, prec);
        let err = e.accuracy_errors.iter().find(|x| x.precision == prec);
        let (measured, verdict, reason) = match (a, err) {
            (Some(a), _) => accuracy_verdict(a),
            (None, Some(x)) => ("not measured".into(), Verdict::Fail, Some(x.error.clone())),
            (None, None) => (
                "not measured".into(),
                Verdict::Fail,
                na("the accuracy stage did not run"),
            ),
        };
        if verdict != Verdict::Pass {
            f.reasons.push(format!(
                "accuracy {}: {}",
                prec,
                reason
                    .clone()
                    .unwrap_or_else(|| "below the required level".into())
            ));
        }
        f.add(
            "§6.2 i",
            "Accuracy (Table 3)",
            format!(
                "{}: Table 3 level {} or stricter (Table 4, {}), against an independent reference that null outputs fail",
                prec,
                p.accuracy.required,
                p.scenario
            ),
            measured,
            verdict,
            reason,
            Source::Standard,
        );
    }
    f
}

/// The profile's task-agreement checks of one precision: (what, threshold, measured, met).
fn agreement_checks(p: &Profile, a: &AccuracyReport) -> Vec<(String, Option<f64>, bool)> {
    let s = &p.accuracy;
    let g = &a.agreement;
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    let mut out = Vec::new();
    let mut at_least = |name: &str, min: Option<f64>, v: Option<f64>| {
        if let Some(min) = min {
            out.push((
                format!(
                    "{name} ≥ {} (measured {})",
                    pct(min),
                    v.map(pct).unwrap_or_else(|| "n/a".into())
                ),
                v,
                v.is_some_and(|v| v >= min),
            ));
        }
    };
    at_least(
        "top-1 agreement",
        s.min_top1,
        g.fraction().filter(|_| g.top5().is_some()),
    );
    at_least("top-5 agreement", s.min_top5, g.top5());
    at_least("detection F1", s.min_f1, g.f1());
    for (name, max, v) in [
        ("MAE", s.max_mae, g.mae()),
        ("MAPE %", s.max_mape_pct, g.mape_pct()),
    ] {
        if let Some(max) = max {
            out.push((
                format!(
                    "{name} ≤ {max} (measured {})",
                    v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "n/a".into())
                ),
                v,
                v.is_some_and(|v| v <= max),
            ));
        }
    }
    out
}

/// Task agreement with the reference, per graded precision: the profile's thresholds.
fn agreement(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    for a in &e.accuracy {
        let prec = a.precision.map(|x| x.to_string()).unwrap_or_default();
        let checks = agreement_checks(p, a);
        if checks.is_empty() {
            f.add(
                "§6.2 i",
                "Task agreement",
                format!("{prec}: agreement with the reference's decisions (no profile threshold)"),
                a.agreement_text.clone(),
                Verdict::NotApplicable,
                na("the profile sets no agreement threshold"),
                Source::ReportOnly,
            );
            continue;
        }
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.2)
            .map(|c| c.0.as_str())
            .collect();
        if !failed.is_empty() {
            f.reasons
                .push(format!("task agreement {prec}: {}", failed.join("; ")));
        }
        f.add(
            "§6.2 i",
            "Task agreement",
            format!(
                "{prec}: {}",
                checks
                    .iter()
                    .map(|c| c.0.split(" (measured").next().unwrap_or(""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            a.agreement_text.clone(),
            if failed.is_empty() {
                Verdict::Pass
            } else {
                Verdict::Fail
            },
            (!failed.is_empty()).then(|| failed.join("; ")),
            Source::Profile,
        );
    }
    f
}

/// §7.2.1: what the lab attests.
fn attestations(p: &Profile) -> Found {
    let mut f = Found::default();
    let att = &p.attestations;
    for (title, v) in [
        ("Installation package", &att.installation_package),
        ("C/C++ inference library", &att.cpp_library),
        ("Container run image", &att.container_run_image),
        ("Container build image", &att.container_build_image),
    ] {
        let v = v.as_ref().filter(|s| !s.trim().is_empty());
        f.add(
            "§7.2.1",
            title,
            "present (cannot be measured; attested by the lab)",
            v.cloned().unwrap_or_else(|| "not attested".into()),
            if v.is_some() {
                Verdict::Attested
            } else {
                Verdict::NotApplicable
            },
            if v.is_some() {
                None
            } else {
                na("not attested in the profile's [attestations]")
            },
            Source::Standard,
        );
    }
    f
}

/// §7.2.2: the basic model runs and its FP32 result is correct.
fn model_support(backend: &str, e: &Evidence) -> Found {
    let mut f = Found::default();
    let fp32 = e
        .accuracy
        .iter()
        .find(|a| a.precision == Some(Precision::Fp32));
    let (verdict, reason) = match fp32 {
        None => (
            Verdict::NotApplicable,
            na("the profile does not grade FP32"),
        ),
        Some(a) => match accuracy_verdict(a) {
            (_, Verdict::Invalid, why) => (Verdict::Invalid, why),
            _ if a.level == Some(Level::C4) && a.nonfinite.is_empty() => (Verdict::Pass, None),
            _ => (
                Verdict::Fail,
                Some(format!(
                    "the FP32 model on {backend} is not within C4 of the CPU reference"
                )),
            ),
        },
    };
    f.add(
        "§7.2.2",
        "Model support",
        "the model runs and its results are correct",
        match fp32 {
            Some(a) => format!(
                "FP32 on {backend}: MSE {} against the CPU reference",
                sci(a.mse)
            ),
            None => "FP32 not graded".into(),
        },
        verdict,
        reason,
        Source::Standard,
    );
    f
}

/// §7.2.3–7.2.4 and Table 5.
fn speed(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(s) = &e.speed else {
        f.add(
            "Table 5",
            "Speed level",
            format!("{} or more demanding ({})", p.speed.required, p.scenario),
            "not measured",
            Verdict::Fail,
            na("the speed stage did not produce a result"),
            Source::Profile,
        );
        f.reasons.push("speed: not measured".into());
        return f;
    };
    let q = p.speed.percentile;
    let lat = percentile_of(s, q);
    let fps = s.fps.value;
    let level = lat.zip(fps).and_then(|(l, x)| p.speed_level(l, x));
    let valid = s.validity.result == Verdict::Valid;
    let speed_ok = valid && profile::speed_meets(level, p.speed.required) && s.complete;
    let t = p.speed.levels.get(&p.speed.required);
    let pass = |ok: bool| if ok { Verdict::Pass } else { Verdict::Fail };
    f.add(
        "§7.2.3",
        "Time (latency)",
        format!(
            "P{q} end-to-end batch-1 latency ≤ {} ms ({} of Table 5)",
            t.map(|t| t.max_latency_ms).unwrap_or(f64::NAN),
            p.speed.required
        ),
        match (&s.latency_ms, lat) {
            (Some(l), Some(x)) => format!(
                "P{q} {x:.3} ms; mean {:.3} ms, P99 {:.3} ms, N = {}",
                l.mean, l.p99, l.n
            ),
            _ => "n/a: no samples".into(),
        },
        pass(lat.zip(t).is_some_and(|(x, t)| x <= t.max_latency_ms) && valid),
        None,
        Source::Profile,
    );
    f.add(
        "§7.2.4",
        "FPS",
        format!(
            "FPS = N/ΣTi ≥ {} ({} of Table 5)",
            t.map(|t| t.min_fps).unwrap_or(f64::NAN),
            p.speed.required
        ),
        format!(
            "{} 1/s; wall-clock throughput {} 1/s",
            opt(fps, ""),
            opt(s.throughput.value, "")
        ),
        pass(fps.zip(t).is_some_and(|(x, t)| x >= t.min_fps) && valid),
        None,
        Source::Profile,
    );
    let achieved = level
        .map(|l| l.to_string())
        .unwrap_or_else(|| "below C4".into());
    f.add(
        "Table 5",
        "Speed level",
        format!("{} or more demanding ({})", p.speed.required, p.scenario),
        format!("{achieved} (run {})", s.validity.result),
        pass(speed_ok),
        (!valid).then(|| {
            format!(
                "the run is INVALID: {}",
                s.validity
                    .rules
                    .iter()
                    .filter(|r| !r.passed)
                    .map(|r| format!("{} ({})", r.rule, r.detail))
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        }),
        Source::Profile,
    );
    if !speed_ok {
        f.reasons.push(format!(
            "speed: {achieved} achieved, {} required{}",
            p.speed.required,
            if valid { "" } else { " (run INVALID)" }
        ));
    }
    f
}

/// §7.2.5: the highest QPS within the bound.
fn qps(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    match (&p.qps, &e.qps) {
        (None, _) => f.add(
            "§7.2.5",
            "QPS",
            "maximum queries per second within a response-time bound",
            "not measured",
            Verdict::NotApplicable,
            na("the profile sets no QPS requirement (no [qps] section)"),
            Source::Standard,
        ),
        (Some(q), None) => {
            f.add(
                "§7.2.5",
                "QPS",
                format!("max QPS within {} ≥ {} req/s", q.slo, q.min_qps),
                "not measured",
                Verdict::Fail,
                Some("the QPS stage did not produce a result".into()),
                Source::Profile,
            );
            f.reasons.push("QPS: not measured".into());
        }
        (Some(q), Some(m)) => {
            let ok = m.max_qps.is_some_and(|v| v >= q.min_qps);
            let measured = match (m.max_qps, m.best_step) {
                (Some(v), Some(k)) => {
                    let s = &m.steps[k];
                    format!(
                        "{v:.1} req/s (open loop, Poisson; offered {:.1} req/s; {}; {} failed of {})",
                        s.target,
                        s.slo_values
                            .iter()
                            .map(|(n, x)| format!(
                                "{n} {}",
                                x.map(|x| format!("{x:.2} ms"))
                                    .unwrap_or_else(|| "n/a".into())
                            ))
                            .collect::<Vec<_>>()
                            .join(", "),
                        s.failed,
                        s.sent
                    )
                }
                _ => m.max_qps_na.clone().unwrap_or_else(|| "n/a".into()),
            };
            let max = m
                .max_qps
                .map(|v| format!("{v:.1}"))
                .unwrap_or_else(|| "n/a".into());
            f.add(
                "§7.2.5",
                "QPS",
                format!(
                    "max QPS within {} (error budget {}) ≥ {} req/s",
                    q.slo, q.error_budget, q.min_qps
                ),
                measured,
                if ok { Verdict::Pass } else { Verdict::Fail },
                (!ok).then(|| format!("max QPS {max} < {} req/s", q.min_qps)),
                Source::Profile,
            );
            if !ok {
                f.reasons.push(format!(
                    "QPS: {} achieved, {} req/s required",
                    m.max_qps
                        .map(|v| format!("{v:.1} req/s"))
                        .unwrap_or_else(|| "none".into()),
                    q.min_qps
                ));
            }
        }
    }
    f
}

/// LLM serving (MindIE Benchmark, SPEC §7): only when the profile has an [llm] stage.
fn llm(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(l) = &p.llm else { return f };
    let mut req = Vec::new();
    let mut bad = Vec::new();
    let measured = match e.llm.as_ref().and_then(|x| x.runs.first()) {
        None => {
            bad.push("not measured".to_string());
            "not measured".to_string()
        }
        Some(run) => {
            let slo90 = |m: &str| {
                run.metrics
                    .get(m)
                    .and_then(|s| s.as_ref())
                    .map(|s| s.SLO_P90)
            };
            // (figure, the profile's bound, the measured value, bound is an upper one, unit)
            type Check<'a> = (&'a str, Option<f64>, Option<f64>, bool, &'a str);
            let checks: [Check; 4] = [
                (
                    "FirstTokenTime SLO_P90",
                    l.max_first_token_ms,
                    slo90("FirstTokenTime"),
                    true,
                    "ms",
                ),
                ("TPOT SLO_P90", l.max_tpot_ms, slo90("TPOT"), true, "ms"),
                (
                    "Throughput",
                    l.min_throughput,
                    Some(run.throughput),
                    false,
                    "req/s",
                ),
                (
                    "GenerateSpeed",
                    l.min_generate_speed,
                    run.generate_speed,
                    false,
                    "token/s",
                ),
            ];
            for (name, limit, value, upper, unit) in checks {
                let Some(limit) = limit else { continue };
                req.push(format!(
                    "{name} {} {limit} {unit}",
                    if upper { "≤" } else { "≥" }
                ));
                match value {
                    Some(v) if (upper && v <= limit) || (!upper && v >= limit) => {}
                    Some(v) => bad.push(format!("{name} {v:.3} {unit}")),
                    None => bad.push(format!("{name} n/a")),
                }
            }
            if run.failed > 0 {
                bad.push(format!("{} of {} requests failed", run.failed, run.total));
            }
            format!(
                "Throughput {:.3} req/s, GenerateSpeed {}, FirstTokenTime SLO_P90 {}, TPOT SLO_P90 {}; {} failed of {}",
                run.throughput,
                run.generate_speed
                    .map(|v| format!("{v:.1} token/s"))
                    .unwrap_or_else(|| "n/a".into()),
                opt(slo90("FirstTokenTime"), " ms"),
                opt(slo90("TPOT"), " ms"),
                run.failed,
                run.total
            )
        }
    };
    req.push("no failed request".into());
    let ok = bad.is_empty();
    f.add(
        "SPEC §7",
        "LLM serving (MindIE Benchmark)",
        format!(
            "{} at concurrency {} ({})",
            req.join(", "),
            l.concurrency,
            l.model
        ),
        measured,
        if ok { Verdict::Pass } else { Verdict::Fail },
        (!ok).then(|| bad.join("; ")),
        Source::Profile,
    );
    if !ok {
        f.reasons.push(format!("LLM serving: {}", bad.join("; ")));
    }
    f
}

/// The sensor and device name (`gpu1`, `npu0`) whose utilization and power an accelerator
/// run must record; `Err` when acceval has no sensor for that device.
fn accelerator_channels(b: &BackendSettings) -> Option<Result<(&'static str, String), String>> {
    let traits = backend::describe(b);
    match (traits.class, traits.sensor) {
        (DeviceClass::Cpu | DeviceClass::Emulated, _) => None,
        (_, Some(Sensor::Nvml)) => Some(
            crate::util::cuda_pin::nvml_index(b.spec.device.unwrap_or(0))
                .map(|i| ("nvml", format!("gpu{i}"))),
        ),
        (_, Some(Sensor::Dcmi)) => Some(Ok(("dcmi", format!("npu{}", b.spec.device.unwrap_or(0))))),
        (c, None) => Some(Err(format!(
            "acceval has no utilization or power sensor for the {c} of {}",
            b.spec
        ))),
    }
}

/// Why the accelerator's utilization and power were not recorded, when they were not.
fn accelerator_missing(
    b: &BackendSettings,
    t: &crate::report::schema::telemetry::TelemetrySummary,
) -> Option<String> {
    let (sensor, dev) = match accelerator_channels(b)? {
        Ok(x) => x,
        Err(why) => return Some(why),
    };
    let has = |k: Kind| {
        t.channels
            .iter()
            .any(|c| c.kind == k && c.name.starts_with(&format!("{dev}.")) && c.samples > 0)
    };
    let status = t
        .sensors
        .iter()
        .find(|s| s.sensor == sensor)
        .map(|s| s.status.to_string())
        .unwrap_or_else(|| "not probed".into());
    match (has(Kind::Utilization), has(Kind::Power)) {
        (true, true) => None,
        (u, p) => Some(format!(
            "the accelerator's {} not recorded ({dev} through {sensor}: {status})",
            match (u, p) {
                (false, false) => "utilization and power were",
                (false, true) => "utilization was",
                _ => "power was",
            }
        )),
    }
}

/// §7.2.6: utilization, with power and energy.
fn telemetry(p: &Profile, b: &BackendSettings, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(t) = e.speed.as_ref().and_then(|s| s.telemetry.as_ref()) else {
        let accel = accelerator_channels(b).is_some();
        let verdict = match (accel, p.telemetry.require.is_empty()) {
            (true, _) => Verdict::Incomplete,
            (false, true) => Verdict::NotApplicable,
            (false, false) => Verdict::Fail,
        };
        if verdict != Verdict::NotApplicable {
            f.reasons.push("telemetry: none was recorded".into());
        }
        f.add(
            "§7.2.6",
            "Utilization, power, energy",
            "sample every second",
            "not measured",
            verdict,
            na("no telemetry was recorded"),
            Source::Profile,
        );
        return f;
    };
    let util: Vec<String> = t
        .channels
        .iter()
        .filter(|c| {
            c.kind == Kind::Utilization && !c.name.starts_with("cpu") || c.name == "cpu.util_pct"
        })
        .map(|c| {
            format!(
                "{} mean {} max {}",
                c.name,
                c.mean
                    .map(|v| format!("{v:.1} %"))
                    .unwrap_or_else(|| "n/a".into()),
                c.max
                    .map(|v| format!("{v:.1} %"))
                    .unwrap_or_else(|| "n/a".into())
            )
        })
        .collect();
    let missing: Vec<&str> = p
        .telemetry
        .require
        .iter()
        .filter(|s| {
            !t.sensors
                .iter()
                .any(|x| x.sensor == s.as_str() && x.status.is_available())
        })
        .map(|s| s.as_str())
        .collect();
    let accel = accelerator_missing(b, t);
    let ok = missing.is_empty() && accel.is_none();
    let power = if t.energy.is_empty() {
        "power and energy: n/a (no sensor)".to_string()
    } else {
        t.energy
            .iter()
            .map(|e| {
                format!(
                    "{}: {:.3} W average, {:.3} J, {} inferences/J",
                    e.device,
                    e.average_power_w,
                    e.joules,
                    opt(e.inferences_per_joule, "")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    };
    f.add(
        "§7.2.6",
        "Utilization, power, energy",
        format!(
            "sample every {} ms; mean and max; required sensors: {}",
            t.interval_ms,
            if p.telemetry.require.is_empty() {
                "none".to_string()
            } else {
                p.telemetry
                    .require
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        ),
        format!("{}; {power}", util.join("; ")),
        if ok { Verdict::Pass } else { Verdict::Fail },
        (!ok).then(|| format!("required sensor(s) not available: {}", missing.join(", "))),
        Source::Profile,
    );
    if !ok {
        f.reasons
            .push("telemetry: a required sensor is not available".into());
    }
    f
}

/// (clause, title, measured, the profile's bound: (limit, value, an upper bound))
type TrainRow = (
    &'static str,
    &'static str,
    String,
    Option<(f64, Option<f64>, bool)>,
);

/// The training clauses' rows: what was measured and the profile's bound on it.
fn train_rows(
    t: &crate::report::schema::profile::TrainSection,
    r: &crate::report::schema::train::TrainReport,
) -> [TrainRow; 5] {
    use crate::report::schema::train::Measured;
    let m = |v: &Measured, unit: &str| match v {
        Measured::Value(x) => format!("{x:.3} {unit}"),
        Measured::Missing(_) => v.to_string(),
    };
    let step = r.step_ms.as_ref();
    let util: Vec<String> = r
        .epochs
        .iter()
        .map(|e| format!("{} (n {})", m(&e.utilization.mean, "%"), e.utilization.n))
        .collect();
    [
        (
            "§7.1.3",
            "Training time (optional)",
            format!(
                "single step avg {} / P90 {} ms (n {}); total Te − Ts {:.3} s; time to target {} in {} epochs",
                step.map(|s| format!("{:.3}", s.average))
                    .unwrap_or_else(|| "n/a".into()),
                step.map(|s| format!("{:.3}", s.p90))
                    .unwrap_or_else(|| "n/a".into()),
                r.steps,
                r.total_s,
                m(&r.time_to_target_s, "s"),
                r.epochs_to_target
            ),
            t.max_step_p90_ms
                .map(|lim| (lim, step.map(|s| s.p90), true)),
        ),
        (
            "§7.1.3",
            "Time to target (optional)",
            m(&r.time_to_target_s, "s"),
            t.max_time_to_target_s
                .map(|lim| (lim, r.time_to_target_s.value(), true)),
        ),
        (
            "§7.1.4",
            "Training utilization (optional)",
            format!(
                "per epoch S/N: {} on {}",
                util.join(", "),
                r.utilization_channel
            ),
            None,
        ),
        (
            "§7.1.5",
            "Training throughput (optional)",
            format!(
                "{}; {}",
                m(&r.throughput_samples_per_s, "samples/s"),
                m(&r.throughput_mb_per_s, "MB/s")
            ),
            t.min_throughput_samples_per_s
                .map(|lim| (lim, r.throughput_samples_per_s.value(), false)),
        ),
        (
            "§7.1.6–7.1.7",
            "Training power and energy efficiency (optional)",
            format!(
                "power avg {}, peak {}; energy {}; N/E {}",
                m(&r.power_w.average, "W"),
                m(&r.power_w.peak, "W"),
                m(&r.energy_j, "J"),
                m(&r.efficiency_samples_per_j, "samples/J")
            ),
            None,
        ),
    ]
}

/// §7.1.3–7.1.7 (optional in the draft): the training figures, reported; the profile's
/// bounds (time to target, step P90, throughput) pass or fail, marked as the profile's.
fn train(p: &Profile, e: &Evidence) -> Found {
    let mut f = Found::default();
    let Some(t) = &p.train else { return f };
    let Some(r) = &e.train else {
        f.add(
            "§7.1",
            "Training (optional)",
            format!("train {}", t.workload),
            "not measured",
            Verdict::Incomplete,
            na("the training stage did not finish"),
            Source::ReportOnly,
        );
        return f;
    };
    for (clause, title, measured, bound) in train_rows(t, r) {
        let (verdict, reason, source, req) = match bound {
            None => (
                Verdict::NotApplicable,
                na("optional in the draft, no level: reported"),
                Source::ReportOnly,
                "report (optional, 非必须)".to_string(),
            ),
            Some((lim, v, upper)) => {
                let req = format!(
                    "{} {lim} (the profile's bound)",
                    if upper { "≤" } else { "≥" }
                );
                match v {
                    Some(v) if (upper && v <= lim) || (!upper && v >= lim) => {
                        (Verdict::Pass, None, Source::Profile, req)
                    }
                    Some(v) => (
                        Verdict::Fail,
                        Some(format!("{v:.3} against the bound {lim}")),
                        Source::Profile,
                        req,
                    ),
                    None => (Verdict::Fail, na("not measured"), Source::Profile, req),
                }
            }
        };
        if verdict == Verdict::Fail {
            f.reasons
                .push(format!("{title}: {}", reason.clone().unwrap_or_default()));
        }
        f.add(clause, title, req, measured, verdict, reason, source);
    }
    f
}
