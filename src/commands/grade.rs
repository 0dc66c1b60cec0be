//! `acceval grade --profile P`: the certification run. Stages, in order: device
//! identification (§6.2 c), model inspection (Tables 1–2), accuracy per precision (Table 3
//! against Table 4), latency/FPS with telemetry (§7.2.3–7.2.6, Table 5), then the clause
//! table and the verdict. Each finished stage is written at once, so an interrupted or
//! failed run leaves a report marked INCOMPLETE with what was measured.
//!
//! `report.json` is the single source of truth: the Markdown and HTML views are rendered
//! from it (here and by `acceval report`), and `manifest.json` holds the SHA-256 of every
//! file so `acceval verify` can tell which one changed.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, bail};
use serde::Serialize;
use serde_json::{Value, json};

use crate::Outcome;
use crate::cli::{BackendArgs, BenchArgs, GradeArgs};
use crate::commands::accuracy::{self, AccuracyReport, EvalOptions};
use crate::commands::bench::{self, BenchReport};
use crate::grade::profile::{self, Profile};
use crate::standard::{self, Level};
use crate::zoo;

pub const SCHEMA: &str = "acceval.report/1";
/// The JSON Schema of `report.json` (committed; `verify` checks against it).
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

#[derive(Debug, Clone, Serialize)]
pub struct Stage {
    pub name: &'static str,
    /// "done", "failed", "interrupted" or "not run".
    pub status: &'static str,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Stage {
    /// A stage that ended in an error.
    fn failed(name: &'static str, t: Instant, e: &anyhow::Error) -> Stage {
        Stage {
            name,
            status: "failed",
            seconds: t.elapsed().as_secs_f64(),
            error: Some(format!("{e:#}")),
        }
    }
    /// A stage that did not start: Ctrl-C came first, or what it needs is missing.
    fn skipped(name: &'static str, interrupted: bool) -> Stage {
        Stage {
            name,
            status: if interrupted {
                "interrupted"
            } else {
                "not run"
            },
            seconds: 0.0,
            error: None,
        }
    }
    /// A stage that ran to its end, or was cut short by Ctrl-C.
    fn ran(name: &'static str, t: Instant, complete: bool) -> Stage {
        Stage {
            name,
            status: if complete { "done" } else { "interrupted" },
            seconds: t.elapsed().as_secs_f64(),
            error: (!complete).then(|| crate::util::signal::INTERRUPTED.to_string()),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Clause {
    pub clause: &'static str,
    pub title: &'static str,
    pub requirement: String,
    pub measured: String,
    /// PASS, FAIL, N/A or ATTESTED.
    pub verdict: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whose threshold: "standard", "profile" or "report only".
    pub source: &'static str,
}

/// Everything a grade measured so far.
#[derive(Default)]
struct Run {
    stages: Vec<Stage>,
    devices: Option<crate::device::Devices>,
    analysis: Option<crate::model::Analysis>,
    model_path: Option<PathBuf>,
    accuracy: Vec<AccuracyReport>,
    accuracy_errors: Vec<(String, String)>,
    speed: Option<BenchReport>,
    speed_model: Option<PathBuf>,
    qps: Option<crate::load::qps::QpsReport>,
    llm: Option<crate::llm::run::LlmReport>,
}

fn git_commit() -> String {
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "HEAD"]) {
        Some(c) => {
            // Report folders being written under reports/ do not make the build modified.
            let dirty = run(&[
                "status",
                "--porcelain",
                "--untracked-files=no",
                "--",
                ".",
                ":!reports",
            ])
            .is_some_and(|s| !s.is_empty());
            if dirty { format!("{c} (modified)") } else { c }
        }
        None => "unknown (not built from a git checkout)".into(),
    }
}

/// The zoo model of a precision: `yolov8n-line` + int8 → `yolov8n-line-int8`.
fn variant(base: &str, precision: &str) -> String {
    match precision {
        "fp32" => base.to_string(),
        p => format!("{base}-{p}"),
    }
}

/// The model whose speed (and QPS) is measured: the zoo variant of the speed precision, or
/// the profile's own file.
fn speed_model_name(p: &Profile) -> String {
    if zoo::parse_name(&p.model.name).is_some() {
        variant(&p.model.name, &p.model.speed_precision)
    } else {
        p.model.name.clone()
    }
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The SPEC.md decisions the numbers depend on, with whose they are.
fn decisions(p: &Profile) -> Value {
    json!([
        {"topic": "units", "source": "acceval (SPEC.md §4)", "text": "MB = 10^6 bytes, G = 10^9; FLOPs = 2 × MACs (one multiply-add = 2 FLOPs); MACs are shown too."},
        {"topic": "Table 1", "source": "acceval (SPEC.md §4)", "text": "Parameter bytes use each initializer's stored type (an INT8 model is smaller than its FP32 parent); Constant-node tensors count, shape-only tensors do not."},
        {"topic": "Table 3", "source": "standard + acceval (SPEC.md §4)", "text": "MSE per output over every element of every input against the FP32 CPU reference; the worst output decides; C4 (< 0.01) is the strictest; a requirement is met by that level or a stricter one; NaN/Inf fails."},
        {"topic": "Table 5", "source": "profile", "text": format!("The draft gives no numbers for the speed levels. This profile's: C1 is the most demanding; a level is met when P{} of the end-to-end batch-1 latency is at most max_latency_ms and FPS (N/ΣTi) is at least min_fps.", p.speed.percentile)},
        {"topic": "§7.2.3 latency", "source": "standard + acceval", "text": "One sample = decode + pre-process + copy in + forward + copy out + post-process (pipeline mode), host wall clock after device synchronisation; average = ΣTi/N; percentiles by linear interpolation (numpy's default)."},
        {"topic": "§7.2.4 FPS", "source": "standard", "text": "FPS = N / ΣTi; the wall-clock throughput N/(end − start) is shown beside it."},
        {"topic": "§7.2.6 utilization", "source": "acceval (SPEC.md §5)", "text": "The draft's text is cut off; taken to mirror §7.1.4: sampled every second over the measured window, mean S/N and max."},
        {"topic": "validity", "source": "acceval", "text": "A speed result counts only when its run is VALID: enough samples for the judged percentile (MLPerf's early-stopping bound at 99 % confidence), minimum runs and duration met, CV and window stability within the profile's bounds."},
        {"topic": "power", "source": "acceval", "text": "A figure that could not be measured is 'n/a: <reason>', never 0. Energy comes from a device counter when there is one, else from the trapezoid rule over power samples."},
    ])
}

fn clause(
    clause: &'static str,
    title: &'static str,
    requirement: impl Into<String>,
    measured: impl Into<String>,
    verdict: &'static str,
    reason: Option<String>,
    source: &'static str,
) -> Clause {
    Clause {
        clause,
        title,
        requirement: requirement.into(),
        measured: measured.into(),
        verdict,
        reason,
        source,
    }
}

/// The clause table and the verdict from what was measured.
fn judge(p: &Profile, backend: &str, r: &Run) -> (Vec<Clause>, &'static str, Vec<String>) {
    let mut c = Vec::new();
    let mut reasons = Vec::new();
    let na = |why: &str| Some(why.to_string());
    // §6 a, b: architecture.
    if let Some(d) = &r.devices {
        c.push(clause(
            "§6 a, b",
            "Processor architecture",
            "report the processor architecture",
            format!(
                "{} ({}, {} logical CPUs)",
                d.host.arch, d.host.cpu_model, d.host.logical_cpus
            ),
            "PASS",
            None,
            "standard",
        ));
        let accel: Vec<String> = d
            .nvidia
            .gpus
            .iter()
            .map(|g| format!("GPU {} {}", g.index, g.name))
            .chain(
                d.ascend
                    .npus
                    .iter()
                    .map(|n| format!("NPU {}:{} {}", n.card_id, n.device_id, n.chip_name)),
            )
            .collect();
        let on_cpu =
            matches!(backend, "cpu") || backend == "ort:cpu" || backend.starts_with("mock");
        c.push(clause(
            "§6 c, §6.2 b",
            "Compute units",
            "inference supports at least one dedicated AI inference chip besides CPU/GPU",
            if accel.is_empty() { "CPU only".to_string() } else { accel.join(", ") },
            if on_cpu { "N/A" } else { "PASS" },
            if on_cpu { na(&format!("the backend under test ({backend}) is the CPU; the requirement concerns the accelerator being certified")) } else { None },
            "standard",
        ));
        c.push(clause(
            "§6.2 c",
            "Device identification",
            "the device is identified; container mapping supported",
            format!(
                "host {} · {} GPU(s) via NVML{} · {} NPU(s){} · container: {}",
                d.host.hostname,
                d.nvidia.gpus.len(),
                d.nvidia
                    .not_available
                    .as_ref()
                    .map(|w| format!(" ({})", w.split(" (").next().unwrap_or(w)))
                    .unwrap_or_default(),
                d.ascend.npus.len(),
                d.ascend
                    .not_available
                    .as_ref()
                    .map(|_| " (no Ascend driver)".to_string())
                    .unwrap_or_default(),
                if d.host.container.in_container {
                    d.host
                        .container
                        .runtime
                        .clone()
                        .unwrap_or_else(|| "yes".into())
                } else {
                    "no".into()
                }
            ),
            "PASS",
            None,
            "standard",
        ));
    }
    c.push(clause(
        "§6 d",
        "Framework",
        "at least one of TensorFlow, PyTorch, Caffe, MXNet, ONNX, MindSpore, Paddle",
        format!(
            "ONNX model on {}",
            r.speed
                .as_ref()
                .map(|s| s.session.engine.clone())
                .or_else(|| r.accuracy.first().map(|a| a.session.engine.clone()))
                .unwrap_or_else(|| backend.to_string())
        ),
        if r.analysis.is_some() { "PASS" } else { "N/A" },
        if r.analysis.is_some() {
            None
        } else {
            na("the model was not inspected")
        },
        "standard",
    ));
    // §6 e: INT8 and FP16.
    let ran = |prec: &str| {
        r.accuracy.iter().any(|a| {
            a.precision.map(|x| format!("{x:?}").to_lowercase()) == Some(prec.to_string())
                && a.complete
        })
    };
    let graded: Vec<&str> = p.model.precisions.iter().map(String::as_str).collect();
    let e_ok = ran("int8") && ran("fp16");
    c.push(clause(
        "§6 e",
        "Precision",
        "inference supports INT8 and FP16",
        format!(
            "graded: {}",
            r.accuracy
                .iter()
                .map(|a| format!(
                    "{} ({})",
                    a.precision
                        .map(|x| format!("{x:?}").to_uppercase())
                        .unwrap_or_default(),
                    a.level
                        .map(|l| l.to_string())
                        .unwrap_or_else(|| "below C1".into())
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        if e_ok {
            "PASS"
        } else if graded.contains(&"int8") && graded.contains(&"fp16") {
            "FAIL"
        } else {
            "N/A"
        },
        if e_ok {
            None
        } else if graded.contains(&"int8") && graded.contains(&"fp16") {
            na("a variant did not run to the end")
        } else {
            na("the profile does not grade both INT8 and FP16")
        },
        "standard",
    ));
    // §6.2 f: placement.
    c.push(clause(
        "§6.2 f",
        "Operator placement and fallback",
        "report which operators ran on the accelerator and which fell back to the CPU",
        "see `acceval run --placement` for ONNX Runtime providers",
        "N/A",
        na(if backend.starts_with("ort:") && backend != "ort:cpu" { "placement is recorded by `acceval run --placement`; the grade does not profile the speed run (profiling adds overhead)" } else { "every operator runs on the CPU backend" }),
        "standard",
    ));
    // §6.2 h: Tables 1 and 2.
    if let Some(a) = &r.analysis {
        let t1 = standard::size_level(mb(a.params.bytes));
        let t2 = a.gflops.and_then(standard::size_level);
        c.push(clause(
            "§6.2 h",
            "Model size (Table 1)",
            "grade the parameter size: C1 ≥ 1000 MB, C2 ≥ 100, C3 ≥ 10, C4 > 0",
            format!(
                "{} parameters, {:.3} MB → {}",
                crate::util::fmt::thousands(a.params.count),
                mb(a.params.bytes),
                t1.map(|l| l.to_string())
                    .unwrap_or_else(|| "no level".into())
            ),
            "PASS",
            None,
            "standard",
        ));
        c.push(clause(
            "§6.2 h",
            "Compute (Table 2)",
            "grade the FLOPs: C1 ≥ 1000 G, C2 ≥ 100, C3 ≥ 10, C4 > 0",
            match (a.macs, a.gflops) {
                (Some(m), Some(g)) => format!(
                    "{} MACs, {g:.3} GFLOPs → {}",
                    crate::util::fmt::thousands(m),
                    t2.map(|l| l.to_string())
                        .unwrap_or_else(|| "no level".into())
                ),
                _ => "n/a: MACs not computed".into(),
            },
            if a.gflops.is_some() { "PASS" } else { "N/A" },
            if a.gflops.is_some() {
                None
            } else {
                a.macs_unavailable.clone()
            },
            "standard",
        ));
    }
    // §6.2 i: Table 3 against Table 4.
    for prec in &p.model.precisions {
        let a = r.accuracy.iter().find(|a| {
            a.precision
                .map(|x| format!("{x:?}").to_lowercase())
                .as_deref()
                == Some(prec.as_str())
        });
        let err = r.accuracy_errors.iter().find(|(q, _)| q == prec);
        let (measured, verdict, reason) = match (a, err) {
            (Some(a), _)
                if a.complete
                    && standard::accuracy_meets(a.level, p.accuracy.required)
                    && a.nonfinite.is_empty() =>
            {
                (
                    format!(
                        "MSE {} (output '{}') → {}; decision: {}",
                        fmt_e(a.mse),
                        a.worst_output,
                        a.level.map(|l| l.to_string()).unwrap_or_default(),
                        a.agreement_text
                    ),
                    "PASS",
                    None,
                )
            }
            (Some(a), _) => (
                format!(
                    "MSE {} → {}",
                    fmt_e(a.mse),
                    a.level
                        .map(|l| l.to_string())
                        .unwrap_or_else(|| "below C1".into())
                ),
                "FAIL",
                a.verdict_reason.clone().or(a.error.clone()),
            ),
            (None, Some((_, e))) => ("not measured".into(), "FAIL", Some(e.clone())),
            (None, None) => (
                "not measured".into(),
                "FAIL",
                na("the accuracy stage did not run"),
            ),
        };
        if verdict != "PASS" {
            reasons.push(format!(
                "accuracy {}: {}",
                prec.to_uppercase(),
                reason
                    .clone()
                    .unwrap_or_else(|| "below the required level".into())
            ));
        }
        c.push(Clause {
            clause: "§6.2 i",
            title: "Accuracy (Table 3)",
            requirement: format!(
                "{}: Table 3 level {} or stricter (Table 4, {})",
                prec.to_uppercase(),
                p.accuracy.required,
                p.scenario
            ),
            measured,
            verdict,
            reason,
            source: "standard",
        });
    }
    // §7.2.1: attestations.
    let att = &p.attestations;
    for (title, v) in [
        ("Installation package", &att.installation_package),
        ("C/C++ inference library", &att.cpp_library),
        ("Container run image", &att.container_run_image),
        ("Container build image", &att.container_build_image),
    ] {
        let v = v.as_ref().filter(|s| !s.trim().is_empty());
        c.push(clause(
            "§7.2.1",
            title,
            "present (cannot be measured; attested by the lab)",
            v.cloned().unwrap_or_else(|| "not attested".into()),
            if v.is_some() { "ATTESTED" } else { "N/A" },
            if v.is_some() {
                None
            } else {
                na("not attested in the profile's [attestations]")
            },
            "standard",
        ));
    }
    // §7.2.2: the basic model runs and its FP32 result is correct.
    let fp32 = r
        .accuracy
        .iter()
        .find(|a| a.precision == Some(zoo::Precision::Fp32));
    c.push(clause(
        "§7.2.2",
        "Model support",
        "the model runs and its results are correct",
        match fp32 {
            Some(a) => format!(
                "FP32 on {backend}: MSE {} against the CPU reference",
                fmt_e(a.mse)
            ),
            None => "FP32 not graded".into(),
        },
        match fp32 {
            Some(a) if a.level == Some(Level::C4) => "PASS",
            Some(_) => "FAIL",
            None => "N/A",
        },
        if fp32.is_none() {
            na("the profile does not grade FP32")
        } else {
            None
        },
        "standard",
    ));
    // §7.2.3–7.2.4 and Table 5.
    let speed_ok;
    match &r.speed {
        Some(s) => {
            let q = p.speed.percentile;
            let lat = percentile_of(s, q);
            let fps = s.fps.value;
            let level = match (lat, fps) {
                (Some(l), Some(f)) => p.speed_level(l, f),
                _ => None,
            };
            let valid = s.validity.result == "VALID";
            speed_ok = valid && profile::speed_meets(level, p.speed.required) && s.complete;
            let t = p.speed.levels.get(&p.speed.required.to_string());
            c.push(clause(
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
                if lat.zip(t).is_some_and(|(x, t)| x <= t.max_latency_ms) && valid {
                    "PASS"
                } else {
                    "FAIL"
                },
                None,
                "profile",
            ));
            c.push(clause(
                "§7.2.4",
                "FPS",
                format!(
                    "FPS = N/ΣTi ≥ {} ({} of Table 5)",
                    t.map(|t| t.min_fps).unwrap_or(f64::NAN),
                    p.speed.required
                ),
                format!(
                    "{} 1/s; wall-clock throughput {} 1/s",
                    fps.map(|f| format!("{f:.3}"))
                        .unwrap_or_else(|| "n/a".into()),
                    s.throughput
                        .value
                        .map(|f| format!("{f:.3}"))
                        .unwrap_or_else(|| "n/a".into())
                ),
                if fps.zip(t).is_some_and(|(f, t)| f >= t.min_fps) && valid {
                    "PASS"
                } else {
                    "FAIL"
                },
                None,
                "profile",
            ));
            c.push(clause(
                "Table 5",
                "Speed level",
                format!("{} or more demanding ({})", p.speed.required, p.scenario),
                format!(
                    "{} (run {})",
                    level
                        .map(|l| l.to_string())
                        .unwrap_or_else(|| "below C4".into()),
                    s.validity.result
                ),
                if speed_ok { "PASS" } else { "FAIL" },
                if valid {
                    None
                } else {
                    Some(format!(
                        "the run is INVALID: {}",
                        s.validity
                            .rules
                            .iter()
                            .filter(|r| !r.passed)
                            .map(|r| format!("{} ({})", r.rule, r.detail))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ))
                },
                "profile",
            ));
            if !speed_ok {
                reasons.push(format!(
                    "speed: {} achieved, {} required{}",
                    level
                        .map(|l| l.to_string())
                        .unwrap_or_else(|| "below C4".into()),
                    p.speed.required,
                    if valid {
                        String::new()
                    } else {
                        " (run INVALID)".into()
                    }
                ));
            }
        }
        None => reasons.push("speed: not measured".into()),
    }
    match (&p.qps, &r.qps) {
        (None, _) => c.push(clause(
            "§7.2.5",
            "QPS",
            "maximum queries per second within a response-time bound",
            "not measured",
            "N/A",
            na("the profile sets no QPS requirement (no [qps] section)"),
            "standard",
        )),
        (Some(q), None) => {
            c.push(clause(
                "§7.2.5",
                "QPS",
                format!("max QPS within {} ≥ {} req/s", q.slo, q.min_qps),
                "not measured",
                "FAIL",
                Some("the QPS stage did not produce a result".into()),
                "profile",
            ));
            reasons.push("QPS: not measured".into());
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
            c.push(clause(
                "§7.2.5",
                "QPS",
                format!(
                    "max QPS within {} (error budget {}) ≥ {} req/s",
                    q.slo, q.error_budget, q.min_qps
                ),
                measured,
                if ok { "PASS" } else { "FAIL" },
                (!ok).then(|| {
                    format!(
                        "max QPS {} < {} req/s",
                        m.max_qps
                            .map(|v| format!("{v:.1}"))
                            .unwrap_or_else(|| "n/a".into()),
                        q.min_qps
                    )
                }),
                "profile",
            ));
            if !ok {
                reasons.push(format!(
                    "QPS: {} achieved, {} req/s required",
                    m.max_qps
                        .map(|v| format!("{v:.1} req/s"))
                        .unwrap_or_else(|| "none".into()),
                    q.min_qps
                ));
            }
        }
    }
    // LLM serving (MindIE Benchmark, SPEC §7): only when the profile has an [llm] stage.
    if let Some(l) = &p.llm {
        let mut req = Vec::new();
        let mut bad = Vec::new();
        let measured = match r.llm.as_ref().and_then(|x| x.runs.first()) {
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
                    slo90("FirstTokenTime")
                        .map(|v| format!("{v:.3} ms"))
                        .unwrap_or_else(|| "n/a".into()),
                    slo90("TPOT")
                        .map(|v| format!("{v:.3} ms"))
                        .unwrap_or_else(|| "n/a".into()),
                    run.failed,
                    run.total
                )
            }
        };
        req.push("no failed request".into());
        let ok = bad.is_empty();
        c.push(clause(
            "SPEC §7",
            "LLM serving (MindIE Benchmark)",
            format!(
                "{} at concurrency {} ({})",
                req.join(", "),
                l.concurrency,
                l.model
            ),
            measured,
            if ok { "PASS" } else { "FAIL" },
            (!ok).then(|| bad.join("; ")),
            "profile",
        ));
        if !ok {
            reasons.push(format!("LLM serving: {}", bad.join("; ")));
        }
    }
    // §7.2.6: utilization, with power and energy.
    let tele_ok;
    match r.speed.as_ref().and_then(|s| s.telemetry.as_ref()) {
        Some(t) => {
            let util: Vec<String> = t
                .channels
                .iter()
                .filter(|c| {
                    c.kind == crate::device::telemetry::Kind::Utilization
                        && !c.name.starts_with("cpu")
                        || c.name == "cpu.util_pct"
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
            let missing: Vec<&String> = p
                .telemetry
                .require
                .iter()
                .filter(|s| {
                    !t.sensors
                        .iter()
                        .any(|x| &x.sensor == *s && x.status.is_available())
                })
                .collect();
            tele_ok = missing.is_empty();
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
                            e.inferences_per_joule
                                .map(|v| format!("{v:.3}"))
                                .unwrap_or_else(|| "n/a".into())
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            c.push(clause(
                "§7.2.6",
                "Utilization, power, energy",
                format!(
                    "sample every {} ms; mean and max; required sensors: {}",
                    t.interval_ms,
                    if p.telemetry.require.is_empty() {
                        "none".to_string()
                    } else {
                        p.telemetry.require.join(", ")
                    }
                ),
                format!("{}; {power}", util.join("; ")),
                if tele_ok { "PASS" } else { "FAIL" },
                if tele_ok {
                    None
                } else {
                    Some(format!(
                        "required sensor(s) not available: {}",
                        missing
                            .iter()
                            .map(|s| s.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                },
                "profile",
            ));
            if !tele_ok {
                reasons.push("telemetry: a required sensor is not available".into());
            }
        }
        None => {
            tele_ok = p.telemetry.require.is_empty();
            c.push(clause(
                "§7.2.6",
                "Utilization, power, energy",
                "sample every second",
                "not measured",
                if tele_ok { "N/A" } else { "FAIL" },
                na("no telemetry was recorded"),
                "profile",
            ));
        }
    }
    let complete = r.stages.iter().all(|s| s.status == "done")
        && r.stages.len() == 4 + p.qps.is_some() as usize + p.llm.is_some() as usize;
    let verdict = if !complete {
        "INCOMPLETE"
    } else if reasons.is_empty() {
        "COMPLIANT"
    } else {
        "NOT COMPLIANT"
    };
    if !complete {
        for s in r.stages.iter().filter(|s| s.status != "done") {
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
    (c, verdict, reasons)
}

fn fmt_e(v: f64) -> String {
    crate::report::accuracy::e(v)
}

/// The q-th percentile (0–100) of the end-to-end latencies, by the same rule as every other
/// percentile (linear interpolation): a profile may judge on any percentile, not only the
/// ones the summary holds.
fn percentile_of(b: &BenchReport, q: f64) -> Option<f64> {
    let mut v: Vec<f64> = b.raw.iter().map(|x| x.total_ms).collect();
    v.sort_by(f64::total_cmp);
    crate::measure::stats::quantile_sorted(&v, q / 100.0)
}

/// The whole report as JSON.
fn to_json(
    p: &Profile,
    profile_file: &Path,
    args: &GradeArgs,
    r: &Run,
    created: &str,
) -> anyhow::Result<Value> {
    let backend = args.backend.backend.to_string();
    let (clauses, verdict, reasons) = judge(p, &backend, r);
    let model = match (&r.model_path, &r.analysis) {
        (Some(path), Some(a)) => json!({
            "name": p.model.name,
            "file": path.display().to_string(),
            "sha256": crate::util::fs::sha256_hex(&std::fs::read(path)?),
            "params": a.params.count,
            "params_bytes": a.params.bytes,
            "params_mb": mb(a.params.bytes),
            "table1_level": standard::size_level(mb(a.params.bytes)),
            "macs": a.macs,
            "flops": a.flops,
            "gflops": a.gflops,
            "table2_level": a.gflops.and_then(standard::size_level),
        }),
        _ => Value::Null,
    };
    let speed = r.speed.as_ref().map(|s| {
        let q = p.speed.percentile;
        let lat = percentile_of(s, q);
        let level = lat.zip(s.fps.value).and_then(|(l, f)| p.speed_level(l, f));
        json!({
            "model": r.speed_model.as_ref().map(|m| m.display().to_string()),
            "precision": p.model.speed_precision,
            "percentile": q,
            "latency_at_percentile_ms": lat,
            "fps": s.fps.value,
            "achieved": level,
            "required": p.speed.required,
            "meets": profile::speed_meets(level, p.speed.required) && s.validity.result == "VALID",
            "thresholds": p.speed.levels,
            "bench": s,
            "latencies_ms": s.raw.iter().map(|x| x.total_ms).collect::<Vec<_>>(),
            "telemetry_timeline": s.recording.as_ref().map(|rec| {
                use crate::device::telemetry::Kind;
                let keep: Vec<usize> = rec
                    .channels
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| {
                        (c.kind == Kind::Utilization && (!c.name.starts_with("cpu") || c.name == "cpu.util_pct"))
                            || c.kind == Kind::Power
                    })
                    .map(|(i, _)| i)
                    .collect();
                json!({
                    "channels": keep.iter().map(|&i| rec.channels[i].name.clone()).collect::<Vec<_>>(),
                    "ticks": rec.ticks.iter().map(|t| {
                        let mut row = vec![t.t_ms];
                        row.extend(keep.iter().map(|&i| t.values[i]));
                        row
                    }).collect::<Vec<_>>(),
                })
            }),
        })
    });
    Ok(json!({
        "schema": SCHEMA,
        "tool": {"name": "acceval", "version": env!("CARGO_PKG_VERSION"), "git_commit": git_commit()},
        "created_utc": created,
        "command_line": std::env::args().collect::<Vec<_>>(),
        "profile_file": profile_file.display().to_string(),
        "profile_sha256": crate::util::fs::sha256_hex(&std::fs::read(profile_file)?),
        "profile": p,
        "policy_overridden": args.runs.is_some() || args.duration.is_some(),
        "backend": backend,
        "verdict": verdict,
        "verdict_reasons": reasons,
        "complete": verdict != "INCOMPLETE",
        "stages": r.stages,
        "clauses": clauses,
        "devices": r.devices,
        "model": model,
        "accuracy": r.accuracy,
        "accuracy_errors": r.accuracy_errors.iter().map(|(p, e)| json!({"precision": p, "error": e})).collect::<Vec<_>>(),
        "speed": speed,
        "qps": r.qps,
        "llm": r.llm,
        "decisions": decisions(p),
    }))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
    crate::util::fs::write_atomic(&dir.join(name), bytes)
        .map_err(|e| anyhow::anyhow!("cannot write '{}': {e}", dir.join(name).display()))
}

/// Writes every file of the report and the manifest over them.
fn write_all(
    dir: &Path,
    report: &Value,
    r: &Run,
    p: &Profile,
    profile_file: &Path,
) -> anyhow::Result<()> {
    let mut files: Vec<&str> = vec!["report.json", "report.md", "report.html"];
    write(dir, "report.json", &serde_json::to_vec_pretty(report)?)?;
    write(
        dir,
        "report.md",
        crate::report::compliance::markdown(report).as_bytes(),
    )?;
    write(
        dir,
        "report.html",
        crate::report::compliance::html(report).as_bytes(),
    )?;
    if let Some(s) = &r.speed {
        write(
            dir,
            "metrics.csv",
            crate::report::bench::summary_csv(s).as_bytes(),
        )?;
        write(
            dir,
            "samples.csv",
            crate::report::bench::samples_csv(s).as_bytes(),
        )?;
        files.extend(["metrics.csv", "samples.csv"]);
        if let Some(rec) = &s.recording {
            write(
                dir,
                "telemetry.csv",
                crate::report::bench::telemetry_csv(rec).as_bytes(),
            )?;
            files.push("telemetry.csv");
        }
    }
    if let Some(q) = &r.qps {
        write(
            dir,
            "qps_curve.csv",
            crate::report::qps::curve_csv(q).as_bytes(),
        )?;
        write(dir, "qps.svg", crate::report::qps::chart(q).as_bytes())?;
        files.extend(["qps_curve.csv", "qps.svg"]);
    }
    if let Some(l) = &r.llm {
        write(
            dir,
            "llm_result_common.csv",
            crate::report::llm::common_csv(l).as_bytes(),
        )?;
        files.push("llm_result_common.csv");
        if let Some(run) = l.runs.first() {
            write(
                dir,
                "llm_result_perf.csv",
                crate::report::llm::perf_csv(run).as_bytes(),
            )?;
            files.push("llm_result_perf.csv");
        }
    }
    let hash = |f: &str| -> anyhow::Result<Value> {
        let b = std::fs::read(dir.join(f))?;
        Ok(json!({"file": f, "sha256": crate::util::fs::sha256_hex(&b), "bytes": b.len()}))
    };
    let mut inputs = Vec::new();
    let mut references = Vec::new();
    if let Some((e, _)) = zoo::parse_name(&p.model.name) {
        let m = crate::util::paths::inputs_dir()
            .join(e.input_set)
            .join("manifest.toml");
        if let Ok(b) = std::fs::read(&m) {
            inputs.push(json!({"file": m.display().to_string(), "sha256": crate::util::fs::sha256_hex(&b), "note": "the input set's manifest: SHA-256 of every input file"}));
        }
    }
    for a in &r.accuracy {
        let m = Path::new(&a.reference.dir).join(crate::accuracy::reference::MANIFEST);
        if let Ok(b) = std::fs::read(&m) {
            let v = json!({"file": m.display().to_string(), "sha256": crate::util::fs::sha256_hex(&b), "note": "the reference's manifest: SHA-256 of its model and every .pb"});
            if !references.contains(&v) {
                references.push(v);
            }
        }
    }
    let mut models = Vec::new();
    for m in r
        .accuracy
        .iter()
        .map(|a| (a.model.clone(), a.model_sha256.clone()))
        .chain(
            r.speed
                .as_ref()
                .map(|s| (s.model.clone(), s.model_sha256.clone())),
        )
    {
        let v = json!({"file": m.0, "sha256": m.1});
        if !models.contains(&v) {
            models.push(v);
        }
    }
    let env: serde_json::Map<String, Value> = std::env::vars()
        .filter(|(k, _)| {
            k.starts_with("ACCEVAL_")
                || k == "ORT_DYLIB_PATH"
                || k.starts_with("CUDA_")
                || k.starts_with("ASCEND_")
        })
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let manifest = json!({
        "schema": "acceval.manifest/1",
        "tool": report["tool"],
        "command_line": report["command_line"],
        "profile": {"file": profile_file.display().to_string(), "sha256": report["profile_sha256"]},
        "models": models,
        "inputs": inputs,
        "references": references,
        "seeds": {"inputs": "zoo input sets and weights use fixed seeds (seed_of(name)); recorded in the manifests above", "bench": 0},
        "environment": {"os": std::env::consts::OS, "arch": std::env::consts::ARCH, "variables": env},
        "files": files.iter().map(|f| hash(f)).collect::<anyhow::Result<Vec<_>>>()?,
    });
    write(dir, "manifest.json", &serde_json::to_vec_pretty(&manifest)?)
}

pub fn run(args: GradeArgs) -> anyhow::Result<Outcome> {
    let profile_file = profile::locate(&args.profile)?;
    let p = Profile::load(&profile_file)?;
    let backend = args.backend.backend.to_string();
    let created = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp = created
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    let dir = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports").join(format!(
            "{stamp}Z-{}-{}",
            p.name,
            backend.replace([':', '@', '/'], "_")
        ))
    });
    std::fs::create_dir_all(&dir).with_context(|| format!("creating '{}'", dir.display()))?;
    let stop = crate::util::signal::stop_flag();
    let mut r = Run::default();
    let bar = indicatif::ProgressBar::new(4 + p.qps.is_some() as u64 + p.llm.is_some() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{spinner} [{pos}/{len}] {elapsed_precise} {msg}")
            .expect("valid template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let save = |r: &Run| -> anyhow::Result<()> {
        let v = to_json(&p, &profile_file, &args, r, &created)?;
        write_all(&dir, &v, r, &p, &profile_file)
    };

    // 1. Devices.
    bar.set_message("identifying the devices (§6.2 c)");
    let t = Instant::now();
    r.devices = Some(crate::device::identify());
    r.stages.push(Stage {
        name: "devices",
        status: "done",
        seconds: t.elapsed().as_secs_f64(),
        error: None,
    });
    bar.inc(1);

    // 2. The model (Tables 1–2).
    bar.set_message(format!("inspecting {} (Tables 1–2)", p.model.name));
    let t = Instant::now();
    let base = profile_file
        .parent()
        .map(|d| d.join(&p.model.name))
        .filter(|f| f.is_file())
        .unwrap_or_else(|| PathBuf::from(&p.model.name));
    let inspected = zoo::resolve(&base).and_then(|m| Ok((crate::model::analyse(&m, &[])?, m)));
    match inspected {
        Ok((a, m)) => {
            r.analysis = Some(a);
            r.model_path = Some(m);
            r.stages.push(Stage {
                name: "model",
                status: "done",
                seconds: t.elapsed().as_secs_f64(),
                error: None,
            });
        }
        Err(e) => {
            r.stages.push(Stage {
                name: "model",
                status: "failed",
                seconds: t.elapsed().as_secs_f64(),
                error: Some(format!("{e:#}")),
            });
        }
    }
    bar.inc(1);
    save(&r)?;

    // 3. Accuracy per precision (Table 3).
    let t = Instant::now();
    let mut acc_error = None;
    if r.model_path.is_some() {
        for prec in &p.model.precisions {
            if stop.load(Ordering::Relaxed) {
                acc_error = Some("interrupted (Ctrl-C)".to_string());
                break;
            }
            bar.set_message(format!(
                "accuracy of {} on {backend} (Table 3)",
                prec.to_uppercase()
            ));
            let name = if zoo::parse_name(&p.model.name).is_some() {
                variant(&p.model.name, prec)
            } else {
                p.model.name.clone()
            };
            let res = (|| -> anyhow::Result<AccuracyReport> {
                let model = zoo::resolve(Path::new(&name))?;
                let reference = p
                    .accuracy
                    .reference
                    .as_ref()
                    .map(|d| profile_file.parent().unwrap_or(Path::new(".")).join(d));
                let (reference, relation) =
                    accuracy::find_reference(&model, reference.as_deref(), &args.backend)?;
                accuracy::evaluate(
                    &model,
                    &args.backend,
                    &reference,
                    relation,
                    &EvalOptions {
                        limit: None,
                        task: None,
                        det: Default::default(),
                        required: Some(p.accuracy.required),
                    },
                )
            })();
            match res {
                Ok(a) => r.accuracy.push(a),
                Err(e) => r.accuracy_errors.push((prec.clone(), format!("{e:#}"))),
            }
            save(&r)?;
        }
    }
    let acc_status = if acc_error.is_some() {
        "interrupted"
    } else if r.model_path.is_none() {
        "not run"
    } else {
        "done"
    };
    r.stages.push(Stage {
        name: "accuracy",
        status: acc_status,
        seconds: t.elapsed().as_secs_f64(),
        error: acc_error,
    });
    bar.inc(1);
    save(&r)?;

    // 4. Speed with telemetry (Table 5).
    let t = Instant::now();
    if r.model_path.is_some() && !stop.load(Ordering::Relaxed) {
        bar.set_message(format!(
            "latency, FPS and telemetry of {} on {backend} (§7.2.3–7.2.6)",
            p.model.speed_precision.to_uppercase()
        ));
        let name = speed_model_name(&p);
        let res = zoo::resolve(Path::new(&name)).and_then(|model| {
            let b = BenchArgs {
                backend: BackendArgs {
                    backend: args.backend.backend.clone(),
                    threads: args.backend.threads,
                    graph_opt: args.backend.graph_opt,
                    ep_option: args.backend.ep_option.clone(),
                },
                model: model.clone(),
                inputs: None,
                task: None,
                model_only: p.speed.mode == "model-only",
                shapes: Vec::new(),
                seed: 0,
                warmup: p.policy.warmup,
                warmup_time: p.policy.warmup_time_s,
                runs: args.runs.unwrap_or(p.policy.runs),
                duration: args.duration.unwrap_or(p.policy.duration_s),
                interval_ms: p.policy.interval_ms,
                percentile: p.speed.percentile,
                max_cv: p.policy.max_cv,
                stability: p.policy.stability,
                allow_invalid: true,
                batch: Vec::new(),
                peak_power: false,
                sample_ms: p.policy.sample_ms,
                ptd: args.ptd.clone(),
                detect: crate::cli::DetectArgs {
                    conf: 0.25,
                    iou: 0.45,
                },
                json: false,
                export_json: None,
                export_csv: None,
                export_samples: None,
                export_telemetry: None,
            };
            let s = bench::measure(&b, &stop)?;
            Ok((s, model))
        });
        match res {
            Ok((s, m)) => {
                let status = if s.complete {
                    "done"
                } else if s.error.as_deref() == Some(crate::util::signal::INTERRUPTED) {
                    "interrupted"
                } else {
                    "failed"
                };
                let err = s.error.clone();
                r.speed = Some(s);
                r.speed_model = Some(m);
                r.stages.push(Stage {
                    name: "speed",
                    status,
                    seconds: t.elapsed().as_secs_f64(),
                    error: err,
                });
            }
            Err(e) => r.stages.push(Stage::failed("speed", t, &e)),
        }
    } else {
        r.stages
            .push(Stage::skipped("speed", stop.load(Ordering::Relaxed)));
    }
    bar.inc(1);
    save(&r)?;

    // 5. QPS (§7.2.5), when the profile asks for it.
    if let Some(q) = &p.qps {
        let t = Instant::now();
        if r.model_path.is_some() && !stop.load(Ordering::Relaxed) {
            bar.set_message(format!(
                "QPS of {} served on {backend} at 127.0.0.1 (§7.2.5)",
                p.model.speed_precision.to_uppercase()
            ));
            match qps_stage(&speed_model_name(&p), q, &args.backend, &stop) {
                Ok(rep) => {
                    r.stages.push(Stage::ran("qps", t, rep.complete));
                    r.qps = Some(rep);
                }
                Err(e) => r.stages.push(Stage::failed("qps", t, &e)),
            }
        } else {
            r.stages
                .push(Stage::skipped("qps", stop.load(Ordering::Relaxed)));
        }
        bar.inc(1);
        save(&r)?;
    }

    // 6. LLM serving (MindIE Benchmark's client mode), when the profile asks for it.
    if let Some(l) = &p.llm {
        let t = Instant::now();
        if !stop.load(Ordering::Relaxed) {
            let url = args.llm_url.clone().unwrap_or_else(|| l.url.clone());
            bar.set_message(format!("LLM serving benchmark of {url} (MindIE)"));
            let res = (|| {
                use clap::ValueEnum;
                let api = crate::protocol::generate::Api::from_str(&l.api, false)
                    .map_err(|e| anyhow::anyhow!("[llm] api: {e}"))?;
                let synthetic = profile_file
                    .parent()
                    .unwrap_or(Path::new("."))
                    .join(&l.synthetic_config);
                let settings = crate::llm::LlmSettings {
                    api,
                    dataset: crate::llm::Dataset::Synthetic(Some(synthetic)),
                    concurrency: l.concurrency,
                    warmup: l.warmup,
                    ..crate::llm::LlmSettings::new(&url, &l.model)
                };
                let progress = crate::util::progress::Progress::hidden();
                crate::llm::measure(&settings.plan()?, &progress, &stop)
            })();
            match res {
                Ok(rep) => {
                    r.stages
                        .push(Stage::ran("llm", t, rep.runs.iter().all(|x| x.complete)));
                    r.llm = Some(rep);
                }
                Err(e) => r.stages.push(Stage::failed("llm", t, &e)),
            }
        } else {
            r.stages.push(Stage::skipped("llm", true));
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let v = to_json(&p, &profile_file, &args, &r, &created)?;
    write_all(&dir, &v, &r, &p, &profile_file)?;
    let mut o = std::io::stdout().lock();
    crate::report::compliance::terminal(&mut o, &v, &dir)?;
    match v["verdict"].as_str() {
        Some("COMPLIANT") => Ok(Outcome::Ok),
        Some("NOT COMPLIANT") => Ok(Outcome::NotCompliant),
        _ => bail!(
            "the grade is INCOMPLETE ({}); what was measured is in {}",
            v["verdict_reasons"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|x| x.as_str())
                .unwrap_or("a stage did not finish"),
            dir.display()
        ),
    }
}

/// Serves `model` on 127.0.0.1 (a free port) on the grade's backend and searches its max
/// QPS open loop, as `acceval serve` + `acceval qps` would.
fn qps_stage(
    model: &str,
    q: &crate::grade::profile::QpsSection,
    b: &BackendArgs,
    stop: &std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<crate::load::qps::QpsReport> {
    let backend = BackendArgs {
        backend: b.backend.clone(),
        threads: b.threads,
        graph_opt: b.graph_opt,
        ep_option: b.ep_option.clone(),
    };
    let serve = crate::cli::ServeArgs {
        backend,
        model: PathBuf::from(model),
        name: None,
        host: "127.0.0.1".into(),
        port: 0,
        shapes: Vec::new(),
        instances: 1,
        max_batch: 1,
        batch_timeout_us: 0,
        max_inflight: 4096,
        max_body_mb: 256.0,
    };
    let cfg = crate::server::config(&serve)?;
    let name = cfg.name.clone();
    let running = crate::server::start(cfg, "127.0.0.1", 0)?;
    let settings = crate::load::QpsSettings {
        slo: q.slo.clone(),
        error_budget: q.error_budget,
        max_rate: q.max_rate,
        precision: q.precision,
        step_duration_s: q.step_duration_s,
        warmup_s: q.warmup_s,
        inputs: crate::load::infer::Inputs {
            binary: q.binary,
            seed: crate::load::qps::DEFAULT_SEED,
            ..Default::default()
        },
        ..crate::load::QpsSettings::new(&format!("http://{}", running.addr), &name)
    };
    let progress = crate::util::progress::Progress::hidden();
    let report = settings
        .plan()
        .map_err(anyhow::Error::from)
        .and_then(|plan| crate::load::qps::measure(&plan, &progress, stop));
    running.stop()?;
    report
}

/// `acceval verify DIR`: re-hash every file against `manifest.json` and validate
/// `report.json` against the schema.
pub fn verify(dir: &Path) -> anyhow::Result<Outcome> {
    let mpath = dir.join("manifest.json");
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(&mpath).with_context(|| format!("reading '{}'", mpath.display()))?,
    )
    .with_context(|| format!("'{}' is not JSON", mpath.display()))?;
    let files = manifest["files"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("'{}' lists no files", mpath.display()))?;
    let mut problems = Vec::new();
    let mut ok = 0;
    for f in files {
        let name = f["file"].as_str().unwrap_or("?");
        let want = f["sha256"].as_str().unwrap_or("");
        match std::fs::read(dir.join(name)) {
            Ok(b) => {
                let got = crate::util::fs::sha256_hex(&b);
                if got == want {
                    ok += 1;
                } else {
                    problems.push(format!("{name}: changed (SHA-256 {got}, {} bytes; the manifest records {want}, {} bytes)", b.len(), f["bytes"]));
                }
            }
            Err(e) => problems.push(format!("{name}: missing ({e})")),
        }
    }
    let report: Option<Value> = std::fs::read(dir.join("report.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    match &report {
        Some(r) => {
            let schema: Value =
                serde_json::from_str(REPORT_SCHEMA).expect("the committed schema is JSON");
            let v = jsonschema::validator_for(&schema).expect("the committed schema is valid");
            for e in v.iter_errors(r).take(10) {
                problems.push(format!(
                    "report.json does not match schemas/report.schema.json at {}: {e}",
                    e.instance_path()
                ));
            }
        }
        None => problems.push("report.json: missing or not JSON".into()),
    }
    if problems.is_empty() {
        println!(
            "{}: OK — {ok} files match manifest.json; report.json matches the schema ({})",
            dir.display(),
            SCHEMA
        );
        Ok(Outcome::Ok)
    } else {
        println!("{}: FAILED", dir.display());
        for p in &problems {
            println!("  {p}");
        }
        Ok(Outcome::NotCompliant)
    }
}

/// `acceval report DIR --format md|html|csv`: the views again, from `report.json`.
pub fn render(dir: &Path, format: &str) -> anyhow::Result<Outcome> {
    let p = dir.join("report.json");
    let v: Value = serde_json::from_slice(
        &std::fs::read(&p).with_context(|| format!("reading '{}'", p.display()))?,
    )
    .with_context(|| format!("'{}' is not JSON", p.display()))?;
    let out = match format {
        "md" => crate::report::compliance::markdown(&v),
        "html" => crate::report::compliance::html(&v),
        "csv" => crate::report::compliance::clauses_csv(&v),
        other => bail!("--format {other}: use md, html or csv"),
    };
    use std::io::Write;
    std::io::stdout().lock().write_all(out.as_bytes())?;
    Ok(Outcome::Ok)
}

/// `acceval profile check FILE` and `acceval profile list`.
pub fn profile_command(c: crate::cli::ProfileCommand) -> anyhow::Result<Outcome> {
    match c {
        crate::cli::ProfileCommand::Check { file } => {
            let p = Profile::load(&file)?;
            println!(
                "{}: valid ({}; accuracy {} required, speed {} required at P{})",
                file.display(),
                p.scenario,
                p.accuracy.required,
                p.speed.required,
                p.speed.percentile
            );
            Ok(Outcome::Ok)
        }
        crate::cli::ProfileCommand::List => {
            let dir = crate::util::paths::profiles_dir();
            let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect();
            v.sort();
            for f in v {
                let p = Profile::load(&f)?;
                println!(
                    "{:<26} {:<42} model {:<20} accuracy {} · speed {}",
                    p.name, p.scenario, p.model.name, p.accuracy.required, p.speed.required
                );
            }
            Ok(Outcome::Ok)
        }
    }
}
