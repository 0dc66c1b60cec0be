//! The certification run: stages in order — device identification (§6.2 c), model
//! inspection (Tables 1–2), accuracy per precision (Table 3 against Table 4), latency/FPS
//! with telemetry (§7.2.3–7.2.6, Table 5), QPS (§7.2.5) and LLM serving when the profile
//! asks — then the clause table and the verdict. After each stage the whole report folder
//! is written again, so an interrupted or failed run leaves a report marked INCOMPLETE with
//! what was measured.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use super::Error;
use super::clauses::{self, Evidence};
use super::files;
use super::profile::{self, Profile};
use crate::accuracy::evaluate::{self, EvalOptions};
use crate::backend::BackendSettings;
use crate::measure::bench::{self, BenchSettings, TelemetrySettings};
use crate::measure::harness::Policy;
use crate::report::schema::Precision;
use crate::report::schema::bench::BenchMode;
use crate::report::schema::grade::{
    AccuracyError, Decision, GradeReport, ModelSummary, Resumed, SCHEMA, SpeedResult, Stage,
    StageStatus, Timeline, Tool,
};
use crate::report::schema::telemetry::Kind;
use crate::standard;
use crate::task::detect::DetectParams;
use crate::util::progress::Progress;
use crate::util::signal::Cut;
use crate::zoo;

/// What a grade is asked for.
#[derive(Debug, Clone)]
pub struct GradeSettings {
    /// A shipped profile's name or a profile file.
    pub profile: String,
    pub backend: BackendSettings,
    /// The report folder [default: reports/<UTC time>-<profile>-<backend>].
    pub out: Option<PathBuf>,
    /// Overrides of the profile's run policy (the report marks them).
    pub runs: Option<usize>,
    pub duration_s: Option<f64>,
    /// A SPEC PTDaemon serving a power analyser.
    pub ptd: Option<String>,
    /// The LLM service (overrides the profile's url).
    pub llm_url: Option<String>,
    /// The cluster run for the profile's `[cluster]` stage (a `bench --cluster` DIR).
    pub cluster_run: Option<PathBuf>,
    /// The command line, recorded in the report.
    pub command_line: Vec<String>,
    /// A lab's ed25519 private key: manifest.json is signed after every write.
    pub sign: Option<PathBuf>,
    /// An INCOMPLETE run to continue (`grade --resume DIR`): its folder is the report folder.
    pub resume: Option<super::resume::Previous>,
}

/// A finished grade: the report and its folder.
pub struct Graded {
    pub report: GradeReport,
    pub dir: PathBuf,
}

/// Where a grade keeps what it needs between stages.
struct Ctx<'a> {
    s: &'a GradeSettings,
    p: Profile,
    profile_file: PathBuf,
    dir: PathBuf,
    created: String,
    progress: &'a Progress,
    stop: &'a Arc<AtomicBool>,
    /// The resumes of this run, the latest last.
    resumed: Vec<Resumed>,
}

impl Ctx<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
    fn backend(&self) -> String {
        self.s.backend.spec.to_string()
    }
    /// The report of what was measured so far, and all its files.
    fn save(&self, e: &Evidence) -> Result<GradeReport, Error> {
        let r = report(self, e)?;
        // One generation at a time: a kill at any point leaves the last whole folder, whose
        // manifest matches its files (and its signature the manifest).
        let last = ["manifest.json", super::sign::SIGNATURE_FILE];
        crate::util::fs::replace_dir(&self.dir, &last, |d| -> Result<(), Error> {
            files::write_all(d, &r, e, &self.p, &self.profile_file)?;
            if let Some(key) = &self.s.sign {
                super::sign::sign(d, key)?;
            }
            Ok(())
        })?;
        Ok(r)
    }
}

/// A stage that ended in an error.
fn failed(name: &str, t: Instant, e: &dyn std::fmt::Display) -> Stage {
    Stage {
        name: name.into(),
        status: StageStatus::Failed,
        seconds: t.elapsed().as_secs_f64(),
        error: Some(e.to_string()),
    }
}

/// A stage that did not start: Ctrl-C came first, or what it needs is missing.
fn skipped(name: &str, interrupted: bool) -> Stage {
    Stage {
        name: name.into(),
        status: if interrupted {
            StageStatus::Interrupted
        } else {
            StageStatus::NotRun
        },
        seconds: 0.0,
        error: None,
    }
}

/// A stage that ran to its end, or was cut short by Ctrl-C.
fn ran(name: &str, t: Instant, complete: bool) -> Stage {
    Stage {
        name: name.into(),
        status: if complete {
            StageStatus::Done
        } else {
            StageStatus::Interrupted
        },
        seconds: t.elapsed().as_secs_f64(),
        error: (!complete).then(|| Cut::Interrupted.to_string()),
    }
}

/// This build of acceval.
pub fn tool() -> Tool {
    Tool {
        name: "acceval".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: crate::util::build_info::commit(),
        features: crate::util::build_info::features(),
    }
}

/// The zoo model of a precision: `yolov8n-line` + int8 → `yolov8n-line-int8`.
fn variant(base: &str, precision: Precision) -> String {
    format!("{base}{}", precision.suffix())
}

/// The model whose accuracy is graded at `precision`: the zoo variant, or the profile's file.
fn accuracy_model_name(p: &Profile, precision: Precision) -> String {
    if zoo::parse_name(&p.model.name).is_some() {
        variant(&p.model.name, precision)
    } else {
        p.model.name.clone()
    }
}

/// The model whose speed (and QPS) is measured.
pub fn speed_model_name(p: &Profile) -> String {
    accuracy_model_name(p, p.model.speed_precision)
}

/// Runs the grade of `s`; `stop` (Ctrl-C) ends it early with an INCOMPLETE report.
pub fn grade(
    s: &GradeSettings,
    progress: &Progress,
    stop: &Arc<AtomicBool>,
) -> Result<Graded, Error> {
    let profile_file = profile::locate(&s.profile)?;
    let p = Profile::load(&profile_file)?;
    if let Some(prev) = &s.resume {
        super::resume::check_tool(prev)?;
        super::resume::check_profile(prev, &profile_file)?;
    }
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let created = s
        .resume
        .as_ref()
        .map_or_else(|| now.clone(), |prev| prev.report.created_utc.clone());
    let stamp = created
        .replace([':', '-'], "")
        .replace('T', "-")
        .trim_end_matches('Z')
        .to_string();
    let backend = s.backend.spec.to_string();
    let dir = s.resume.as_ref().map(|prev| prev.dir.clone());
    let dir = dir.or_else(|| s.out.clone()).unwrap_or_else(|| {
        PathBuf::from("reports").join(format!(
            "{stamp}Z-{}-{}",
            p.name,
            backend.replace([':', '@', '/'], "_")
        ))
    });
    if let Some(k) = &s.sign
        && !k.is_file()
    {
        return Err(Error::NoSigningKey { path: k.clone() });
    }
    crate::util::create_dir_all(&dir)?;
    progress.set_length(clauses::stage_count(&p) as u64);
    let carried = s.resume.as_ref().map(super::resume::carry).transpose()?;
    let (mut e, kept) = carried.map_or_else(Default::default, |c| (c.evidence, c.stages));
    let mut resumed = s
        .resume
        .as_ref()
        .map(|prev| prev.report.resumed.clone())
        .unwrap_or_default();
    if s.resume.is_some() {
        resumed.push(Resumed {
            at_utc: now,
            kept_stages: kept.keys().cloned().collect(),
            kept_precisions: if kept.contains_key("accuracy") {
                Vec::new()
            } else {
                e.accuracy.iter().filter_map(|a| a.precision).collect()
            },
        });
    }
    let c = Ctx {
        s,
        p,
        profile_file,
        dir,
        created,
        progress,
        stop,
        resumed,
    };
    stage_devices(&c, &mut e);
    stage_model(&c, &mut e);
    if let Some(prev) = &s.resume {
        let sha = e
            .model_path
            .as_ref()
            .map(|m| crate::util::read(m).map(|b| crate::util::fs::sha256_hex(&b)))
            .transpose()?;
        super::resume::check_measured(prev, &e, sha.as_deref())?;
    }
    c.save(&e)?;
    // A stage the resumed run finished is carried over as it was measured.
    let keep = |name: &str, e: &mut Evidence| match kept.get(name) {
        Some(st) => {
            e.stages.push(st.clone());
            c.progress.inc(1);
            true
        }
        None => false,
    };
    if !keep("accuracy", &mut e) {
        stage_accuracy(&c, &mut e)?;
    }
    if !keep("speed", &mut e) {
        stage_speed(&c, &mut e);
    }
    c.save(&e)?;
    if c.p.qps.is_some() && !keep("qps", &mut e) {
        stage_qps(&c, &mut e);
        c.save(&e)?;
    }
    if c.p.llm.is_some() && !keep("llm", &mut e) {
        stage_llm(&c, &mut e);
        c.save(&e)?;
    }
    if c.p.train.is_some() && !keep("train", &mut e) {
        stage_train(&c, &mut e);
        c.save(&e)?;
    }
    if c.p.cluster.is_some() && !keep("cluster", &mut e) {
        stage_cluster(&c, &mut e);
    }
    let report = c.save(&e)?;
    Ok(Graded { report, dir: c.dir })
}

/// 1. Devices (§6.2 c).
fn stage_devices(c: &Ctx, e: &mut Evidence) {
    c.progress.set_message("identifying the devices (§6.2 c)");
    let t = Instant::now();
    e.devices = Some(crate::device::identify());
    e.stages.push(ran("devices", t, true));
    c.progress.inc(1);
}

/// 2. The model (Tables 1–2).
fn stage_model(c: &Ctx, e: &mut Evidence) {
    c.progress
        .set_message(format!("inspecting {} (Tables 1–2)", c.p.model.name));
    let t = Instant::now();
    let base = c
        .profile_file
        .parent()
        .map(|d| d.join(&c.p.model.name))
        .filter(|f| f.is_file())
        .unwrap_or_else(|| PathBuf::from(&c.p.model.name));
    match zoo::resolve(&base).and_then(|m| Ok((crate::model::analyse(&m, &[])?, m))) {
        Ok((a, m)) => {
            e.analysis = Some(a);
            e.model_path = Some(m);
            e.stages.push(ran("model", t, true));
        }
        Err(err) => e.stages.push(failed("model", t, &err)),
    }
    c.progress.inc(1);
}

/// 3. Accuracy per precision (Table 3); the report is written after each precision.
fn stage_accuracy(c: &Ctx, e: &mut Evidence) -> Result<(), Error> {
    let t = Instant::now();
    let mut interrupted = false;
    if e.model_path.is_some() {
        for &prec in &c.p.model.precisions {
            // Finished before a resume.
            if e.accuracy.iter().any(|a| a.precision == Some(prec)) {
                continue;
            }
            if c.stopped() {
                interrupted = true;
                break;
            }
            c.progress
                .set_message(format!("accuracy of {} on {} (Table 3)", prec, c.backend()));
            match grade_precision(c, prec) {
                Ok(a) => e.accuracy.push(a),
                Err(err) => e.accuracy_errors.push(AccuracyError {
                    precision: prec,
                    error: err.to_string(),
                }),
            }
            c.save(e)?;
        }
    }
    e.stages.push(Stage {
        name: "accuracy".into(),
        status: match (interrupted, e.model_path.is_some()) {
            (true, _) => StageStatus::Interrupted,
            (false, false) => StageStatus::NotRun,
            (false, true) => StageStatus::Done,
        },
        seconds: t.elapsed().as_secs_f64(),
        error: interrupted.then(|| Cut::Interrupted.to_string()),
    });
    c.progress.inc(1);
    Ok(())
}

/// The accuracy report of one precision.
fn grade_precision(
    c: &Ctx,
    prec: Precision,
) -> Result<crate::report::schema::accuracy::AccuracyReport, crate::accuracy::Error> {
    let model = zoo::resolve(Path::new(&accuracy_model_name(&c.p, prec)))?;
    let reference =
        c.p.accuracy
            .reference
            .as_ref()
            .map(|d| c.profile_file.parent().unwrap_or(Path::new(".")).join(d));
    let (reference, relation) =
        evaluate::find_reference(&model, reference.as_deref(), &c.s.backend, c.progress)?;
    evaluate::evaluate(
        &model,
        &c.s.backend,
        &reference,
        relation,
        &EvalOptions {
            shard: None,
            limit: None,
            task: None,
            det: DetectParams::default(),
            required: Some(c.p.accuracy.required),
        },
    )
}

/// The benchmark settings of the profile's speed stage.
pub fn speed_settings(
    p: &Profile,
    model: PathBuf,
    backend: BackendSettings,
    runs: Option<usize>,
    duration_s: Option<f64>,
    ptd: Option<String>,
) -> BenchSettings {
    BenchSettings {
        model_only: p.speed.mode == BenchMode::ModelOnly,
        policy: Policy {
            warmup: p.policy.warmup,
            warmup_time_s: p.policy.warmup_time_s,
            runs: runs.unwrap_or(p.policy.runs),
            duration_s: duration_s.unwrap_or(p.policy.duration_s),
            interval_ms: p.policy.interval_ms,
            percentile: p.speed.percentile / 100.0,
            max_cv: p.policy.max_cv,
            stability: p.policy.stability,
        },
        telemetry: TelemetrySettings {
            sample_ms: p.policy.sample_ms,
            ptd,
        },
        peak_gflops: p.speed.peak_gflops,
        pipeline_workers: p.speed.pipeline_workers.unwrap_or(0),
        pipeline_instances: p.speed.pipeline_instances.unwrap_or(1),
        ..BenchSettings::new(model, backend)
    }
}

/// 4. Speed with telemetry (Table 5).
fn stage_speed(c: &Ctx, e: &mut Evidence) {
    let t = Instant::now();
    if e.model_path.is_none() || c.stopped() {
        e.stages.push(skipped("speed", c.stopped()));
        c.progress.inc(1);
        return;
    }
    c.progress.set_message(format!(
        "latency, FPS and telemetry of {} on {} (§7.2.3–7.2.6)",
        c.p.model.speed_precision,
        c.backend()
    ));
    let res = zoo::resolve(Path::new(&speed_model_name(&c.p)))
        .map_err(crate::measure::Error::from)
        .and_then(|model| {
            let b = speed_settings(
                &c.p,
                model.clone(),
                c.s.backend.clone(),
                c.s.runs,
                c.s.duration_s,
                c.s.ptd.clone(),
            );
            Ok((bench::measure(&b, &Progress::hidden(), c.stop)?, model))
        });
    if let Ok((_, model)) = &res {
        c.progress
            .set_message(format!("operator placement on {} (§6.2 f)", c.backend()));
        e.placement = crate::measure::placement::probe(model, &c.s.backend, &[]).ok();
    }
    match res {
        Ok((s, m)) => {
            let status = if s.complete {
                StageStatus::Done
            } else if s.interrupted {
                StageStatus::Interrupted
            } else {
                StageStatus::Failed
            };
            e.stages.push(Stage {
                name: "speed".into(),
                status,
                seconds: t.elapsed().as_secs_f64(),
                error: s.error.clone(),
            });
            e.speed = Some(s);
            e.speed_model = Some(m);
        }
        Err(err) => e.stages.push(failed("speed", t, &err)),
    }
    c.progress.inc(1);
}

/// 5. QPS (§7.2.5): `acceval serve` on 127.0.0.1 and the max-QPS search against it.
fn stage_qps(c: &Ctx, e: &mut Evidence) {
    let t = Instant::now();
    if e.model_path.is_none() || c.stopped() {
        e.stages.push(skipped("qps", c.stopped()));
        c.progress.inc(1);
        return;
    }
    c.progress.set_message(format!(
        "QPS of {} served on {} at 127.0.0.1 (§7.2.5)",
        c.p.model.speed_precision,
        c.backend()
    ));
    let q = c.p.qps.as_ref().expect("the profile has [qps]");
    match super::stages::qps(&speed_model_name(&c.p), q, &c.s.backend, c.progress, c.stop) {
        Ok(rep) => {
            e.stages.push(ran("qps", t, rep.complete));
            e.qps = Some(rep);
        }
        Err(err) => e.stages.push(failed("qps", t, &err)),
    }
    c.progress.inc(1);
}

/// 6. LLM serving (MindIE Benchmark's client mode).
fn stage_llm(c: &Ctx, e: &mut Evidence) {
    let t = Instant::now();
    if c.stopped() {
        e.stages.push(skipped("llm", true));
        c.progress.inc(1);
        return;
    }
    let l = c.p.llm.as_ref().expect("the profile has [llm]");
    let url = c.s.llm_url.clone().unwrap_or_else(|| l.url.clone());
    c.progress
        .set_message(format!("LLM serving benchmark of {url} (MindIE)"));
    let config = c
        .profile_file
        .parent()
        .unwrap_or(Path::new("."))
        .join(&l.synthetic_config);
    let overridden = c.s.llm_url.is_some();
    match super::stages::llm(l, url, overridden, config, c.progress, c.stop) {
        Ok(rep) => {
            e.stages
                .push(ran("llm", t, rep.runs.iter().all(|x| x.complete)));
            e.llm = Some(rep);
        }
        Err(err) => e.stages.push(failed("llm", t, &err)),
    }
    c.progress.inc(1);
}

/// 7. Training (§7.1, optional): the profile's built-in workload on candle.
fn stage_train(c: &Ctx, e: &mut Evidence) {
    let t = Instant::now();
    if c.stopped() {
        e.stages.push(skipped("train", true));
        c.progress.inc(1);
        return;
    }
    let ts = c.p.train.as_ref().expect("the profile has [train]");
    c.progress
        .set_message(format!("training {} (§7.1, optional)", ts.workload));
    let settings = super::stages::train_settings(ts, &c.dir, c.s.ptd.clone());
    match crate::train::run(&settings, &Progress::hidden(), c.stop)
        .map_err(super::stages::train_error)
    {
        Ok(rep) => {
            e.stages.push(ran("train", t, rep.complete));
            e.train = Some(rep);
        }
        Err(err) => e.stages.push(failed("train", t, &err)),
    }
    c.progress.inc(1);
}

/// Stage 8, cluster (§7.2.4 b): merges the cluster run the lab launched under its own launcher,
/// since acceval launches no cluster, and keeps its rank files in the report folder, so
/// that `verify` can merge them again.
fn stage_cluster(c: &Ctx, e: &mut Evidence) {
    let t = Instant::now();
    if c.stopped() {
        e.stages.push(skipped("cluster", true));
        c.progress.inc(1);
        return;
    }
    c.progress
        .set_message("merging the cluster run (§7.2.4 b)".to_string());
    let Some(dir) = &c.s.cluster_run else {
        e.stages.push(failed(
            "cluster",
            t,
            &format!(
                "the profile's [cluster] section needs a cluster run: launch `acceval bench --model {} --cluster DIR` under mpirun, srun or a Kubernetes Indexed Job (docs/cluster.md), then grade again with `--cluster-run DIR`",
                speed_model_name(&c.p)
            ),
        ));
        c.progress.inc(1);
        return;
    };
    match super::cluster::collect(dir) {
        Ok((report, files)) => {
            e.stages.push(ran("cluster", t, true));
            e.cluster = Some(report);
            e.cluster_files = files;
        }
        Err(err) => e.stages.push(failed("cluster", t, &err)),
    }
    c.progress.inc(1);
}

/// The SPEC.md decisions the numbers depend on, with whose they are.
pub fn decisions(p: &Profile) -> Vec<Decision> {
    let d = |topic: &str, source: &str, text: String| Decision {
        topic: topic.into(),
        source: source.into(),
        text,
    };
    vec![
        d("units", "acceval (SPEC.md §4)", "MB = 10^6 bytes, G = 10^9; FLOPs = 2 × MACs (one multiply-add = 2 FLOPs); MACs are shown too.".into()),
        d("Table 1", "acceval (SPEC.md §4)", "Parameter bytes use each initializer's stored type (an INT8 model is smaller than its FP32 parent); Constant-node tensors count, shape-only tensors do not.".into()),
        d("Table 3", "standard + acceval (SPEC.md §4)", "MSE per output over every element of every input against the FP32 CPU reference; the worst output decides; C4 (< 0.01) is the strictest; a requirement is met by that level or a stricter one; NaN/Inf fails.".into()),
        d("Table 5", "profile", format!("The draft gives no numbers for the speed levels. This profile's: C1 is the most demanding; a level is met when P{} of the end-to-end batch-1 latency is at most max_latency_ms and FPS (N/ΣTi) is at least min_fps.", p.speed.percentile)),
        d("§7.2.3 latency", "standard + acceval", "One sample = decode + pre-process + copy in + forward + copy out + post-process (pipeline mode), host wall clock after device synchronisation; average = ΣTi/N; percentiles by linear interpolation (numpy's default).".into()),
        d("§7.2.4 FPS", "standard", "FPS = N / ΣTi; the wall-clock throughput N/(end − start) is shown beside it.".into()),
        d("§7.2.6 utilization", "acceval (SPEC.md §5)", "The draft's text is cut off; taken to mirror §7.1.4: sampled every second over the measured window, mean S/N and max.".into()),
        d("validity", "acceval", "A speed result counts only when its run is VALID: enough samples for the judged percentile (MLPerf's early-stopping bound at 99 % confidence), minimum runs and duration met, CV and window stability within the profile's bounds.".into()),
        d("power", "acceval", "A figure that could not be measured is 'n/a: <reason>', never 0. Energy comes from a device counter when there is one, else from the trapezoid rule over power samples.".into()),
    ]
}

/// Tables 1–2 of the inspected model.
fn model_summary(p: &Profile, e: &Evidence) -> Result<Option<ModelSummary>, Error> {
    let (Some(path), Some(a)) = (&e.model_path, &e.analysis) else {
        return Ok(None);
    };
    let mb = a.params.bytes as f64 / 1e6;
    Ok(Some(ModelSummary {
        name: p.model.name.clone(),
        file: path.display().to_string(),
        sha256: crate::util::fs::sha256_hex(&crate::util::read(path)?),
        params: a.params.count,
        params_bytes: a.params.bytes,
        params_mb: mb,
        table1_level: standard::size_level(mb),
        macs: a.macs,
        flops: a.flops,
        gflops: a.gflops,
        table2_level: a.gflops.and_then(standard::size_level),
    }))
}

/// The speed stage as the report holds it.
fn speed_result(p: &Profile, e: &Evidence) -> Option<SpeedResult> {
    if let Some(carried) = &e.speed_carried {
        return Some(carried.clone());
    }
    let s = e.speed.as_ref()?;
    let q = p.speed.percentile;
    let lat = clauses::percentile_of(s, q);
    let fps = clauses::judged_fps(p, s);
    let level = lat.zip(fps).and_then(|(l, f)| p.speed_level(l, f));
    let timeline = s.recording.as_ref().map(|rec| {
        let keep: Vec<usize> = rec
            .channels
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                (c.kind == Kind::Utilization
                    && (!c.name.starts_with("cpu") || c.name == "cpu.util_pct"))
                    || c.kind == Kind::Power
            })
            .map(|(i, _)| i)
            .collect();
        Timeline {
            channels: keep.iter().map(|&i| rec.channels[i].name.clone()).collect(),
            ticks: rec
                .ticks
                .iter()
                .map(|t| {
                    let mut row = vec![t.t_ms];
                    row.extend(keep.iter().map(|&i| t.values[i]));
                    row
                })
                .collect(),
        }
    });
    Some(SpeedResult {
        model: e.speed_model.as_ref().map(|m| m.display().to_string()),
        precision: p.model.speed_precision,
        percentile: q,
        latency_at_percentile_ms: lat,
        fps,
        achieved: level,
        required: p.speed.required,
        meets: profile::speed_meets(level, p.speed.required)
            && s.validity.result == crate::report::schema::Verdict::Valid,
        thresholds: p.speed.levels.clone(),
        compute: s.compute.clone(),
        bench: s.clone(),
        latencies_ms: s.raw.iter().map(|x| x.total_ms).collect(),
        telemetry_timeline: timeline,
    })
}

/// The whole report from what was measured.
fn report(c: &Ctx, e: &Evidence) -> Result<GradeReport, Error> {
    let backend = c.backend();
    let j = clauses::judge(&c.p, &c.s.backend, e);
    Ok(GradeReport {
        schema: SCHEMA.into(),
        tool: tool(),
        created_utc: c.created.clone(),
        command_line: c.s.command_line.clone(),
        profile_file: c.profile_file.display().to_string(),
        profile_sha256: crate::util::fs::sha256_hex(&crate::util::read(&c.profile_file)?),
        profile: c.p.clone(),
        policy_overridden: c.s.runs.is_some() || c.s.duration_s.is_some(),
        backend,
        complete: j.verdict != crate::report::schema::Verdict::Incomplete,
        verdict: j.verdict,
        verdict_reasons: j.reasons,
        stages: e.stages.clone(),
        clauses: j.clauses,
        devices: e.devices.clone(),
        model: model_summary(&c.p, e)?,
        accuracy: e.accuracy.clone(),
        accuracy_errors: e.accuracy_errors.clone(),
        speed: speed_result(&c.p, e),
        placement: e.placement.clone(),
        qps: e.qps.clone(),
        llm: e.llm.clone(),
        train: e.train.clone(),
        cluster: e.cluster.clone(),
        decisions: decisions(&c.p),
        resumed: c.resumed.clone(),
    })
}
