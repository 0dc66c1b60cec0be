//! Scenario profiles (`profiles/*.toml`): what `acceval grade` measures and the thresholds it
//! judges by. Tables 4 and 5 give each scenario's required accuracy and speed levels; the
//! draft gives no numbers for the speed levels, so each profile defines them, and reports
//! mark them as the profile's (SPEC.md §4, Decisions).
//!
//! Parsing rejects unknown keys (a typo is an error naming the key and its line); the checks
//! after parsing name the key and line too.

use std::path::{Path, PathBuf};

use crate::report::schema::Precision;
use crate::standard::Level;

pub const SCHEMA: &str = "acceval.profile/1";

pub use crate::report::schema::profile::{
    AccuracySection, Attestations, LlmSection, ModelSection, PolicySection, Profile, QpsSection,
    SpeedLevel, SpeedSection, TelemetrySection,
};

/// A profile error: the key, its line (1-based, when found) and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}{}: {key}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct ProfileError {
    pub file: String,
    pub key: String,
    pub line: Option<usize>,
    pub message: String,
}

/// The line of `key` inside table `[table]` (or at the top when `table` is empty).
fn line_of(text: &str, table: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, l) in text.lines().enumerate() {
        let t = l.trim();
        if let Some(h) = t.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            current = h.trim().to_string();
            if key.is_empty() && current == table {
                return Some(i + 1);
            }
            continue;
        }
        if current == table && t.split('=').next().map(str::trim) == Some(key) && !key.is_empty() {
            return Some(i + 1);
        }
    }
    None
}

/// The longest duration a profile may set, s (one week).
pub const MAX_SECONDS: f64 = 7.0 * 24.0 * 3600.0;
/// The largest count (warm-ups, runs) a profile may set.
pub const MAX_COUNT: u64 = 1_000_000_000;

/// The key a TOML error is about: the key on the error's line (a type error points at the
/// value), else the first `name` the message quotes (an unknown field).
fn error_key(text: &str, line: Option<usize>, msg: &str) -> String {
    let on_line = line
        .and_then(|l| text.lines().nth(l.saturating_sub(1)))
        .and_then(|l| l.split_once('='))
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let quoted = msg.split('`').nth(1).map(str::to_string);
    let table = line.and_then(|l| {
        text.lines()
            .take(l)
            .filter_map(|x| x.trim().strip_prefix('[').and_then(|h| h.strip_suffix(']')))
            .last()
            .map(|h| h.trim().to_string())
    });
    match (msg.starts_with("unknown field"), on_line, quoted, table) {
        (true, _, Some(q), _) => q,
        (false, Some(k), _, Some(t)) => format!("{t}.{k}"),
        (false, Some(k), _, None) => k,
        (_, _, Some(q), _) => q,
        _ => "(syntax)".into(),
    }
}

/// Whether `path` is a regular file that parses as an ONNX model.
fn onnx_file(path: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    crate::model::onnx::OnnxFile::open(path)
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
}

/// Builds the errors of one profile file.
struct Checker<'a> {
    text: &'a str,
    file: &'a str,
}

impl Checker<'_> {
    fn err(&self, table: &str, key: &str, message: String) -> ProfileError {
        ProfileError {
            file: self.file.to_string(),
            key: if table.is_empty() {
                key.to_string()
            } else {
                format!("{table}.{key}")
            },
            line: line_of(self.text, table, key),
            message,
        }
    }

    /// `v` must be finite and in (lo, hi] — or [lo, hi] when `lo_ok`.
    fn range(
        &self,
        table: &str,
        key: &str,
        v: f64,
        lo: f64,
        hi: f64,
        lo_ok: bool,
    ) -> Result<(), ProfileError> {
        let ok = v.is_finite() && v <= hi && (v > lo || (lo_ok && v == lo));
        if ok {
            return Ok(());
        }
        let open = if lo_ok { '[' } else { '(' };
        Err(self.err(
            table,
            key,
            format!("{v} must be a finite number in {open}{lo}, {hi}]"),
        ))
    }

    /// A count from `min` to [`MAX_COUNT`].
    fn count(&self, table: &str, key: &str, v: u64, min: u64) -> Result<(), ProfileError> {
        if (min..=MAX_COUNT).contains(&v) {
            return Ok(());
        }
        Err(self.err(table, key, format!("{v} must lie in [{min}, {MAX_COUNT}]")))
    }
}

/// A shipped profile's name, or a file: `line-inspection-realtime` or `my.toml`.
pub fn locate(arg: &str) -> Result<PathBuf, super::Error> {
    let p = Path::new(arg);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    let dir = crate::util::paths::profiles_dir();
    let shipped = dir.join(format!("{arg}.toml"));
    if shipped.is_file() {
        return Ok(shipped);
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.path()
                .file_stem()
                .filter(|_| e.path().extension().is_some_and(|x| x == "toml"))
                .map(|s| s.to_string_lossy().into_owned())
        })
        .collect();
    Err(super::Error::NoProfile {
        name: arg.to_string(),
        shipped: names.join(", "),
    })
}

impl Profile {
    /// Reads and validates a profile file.
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ProfileError {
            file: file.clone(),
            key: "(file)".into(),
            line: None,
            message: format!("cannot read: {e}"),
        })?;
        Profile::parse(&text, &file)
    }

    pub fn parse(text: &str, file: &str) -> Result<Profile, ProfileError> {
        let p: Profile = toml::from_str(text).map_err(|e| {
            let line = e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let msg = e.message().to_string();
            ProfileError {
                file: file.to_string(),
                key: error_key(text, line, &msg),
                line,
                message: msg,
            }
        })?;
        p.check(text, file)?;
        Ok(p)
    }

    /// Validates every number and resolves every path the profile names (the model, the
    /// reference folder, the LLM configuration), relative to the profile's folder.
    fn check(&self, text: &str, file: &str) -> Result<(), ProfileError> {
        let c = Checker { text, file };
        if self.schema != SCHEMA {
            return Err(c.err(
                "",
                "schema",
                format!("'{}', expected '{SCHEMA}'", self.schema),
            ));
        }
        let dir = Path::new(file).parent().unwrap_or(Path::new("."));
        self.check_model(&c, dir)?;
        self.check_agreement(&c)?;
        self.check_speed(&c)?;
        self.check_policy(&c)?;
        self.check_qps(&c)?;
        self.check_llm(&c, dir)?;
        self.check_train(&c)?;
        self.check_cluster(&c)
    }

    fn check_cluster(&self, c: &Checker) -> Result<(), ProfileError> {
        let Some(k) = &self.cluster else {
            return Ok(());
        };
        c.count("cluster", "min_ranks", k.min_ranks as u64, 1)?;
        c.range("cluster", "min_fps", k.min_fps, 0.0, 1e9, false)?;
        if let Some(m) = k.max_imbalance {
            c.range("cluster", "max_imbalance", m, 1.0, 1e3, true)?;
        }
        Ok(())
    }

    fn check_model(&self, c: &Checker, dir: &Path) -> Result<(), ProfileError> {
        if self.model.precisions.is_empty() {
            return Err(c.err(
                "model",
                "precisions",
                "list at least one of fp32, fp16, int8".into(),
            ));
        }
        let zoo = crate::zoo::parse_name(&self.model.name).is_some();
        if !zoo {
            let path = dir.join(&self.model.name);
            if let Err(why) = onnx_file(&path) {
                return Err(c.err(
                    "model",
                    "name",
                    format!(
                        "'{}' is neither a zoo model ({}) nor an ONNX file: {why}",
                        self.model.name,
                        crate::zoo::entries()
                            .iter()
                            .map(|e| e.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if self.model.precisions.iter().any(|&p| p != Precision::Fp32) {
                return Err(c.err(
                    "model",
                    "precisions",
                    "a model file (not a zoo model) has one precision: grade it as [\"fp32\"] and give its FP16/INT8 variants their own profiles".into(),
                ));
            }
        }
        if let Some(r) = &self.accuracy.reference {
            let d = dir.join(r);
            let ok = d.join(crate::accuracy::reference::MANIFEST).is_file()
                || d.join("test_data_set_0").is_dir();
            if !ok {
                return Err(c.err(
                    "accuracy",
                    "reference",
                    format!(
                        "'{}' holds no reference (no {} and no test_data_set_0): make one with `acceval reference --model FP32_MODEL --out {}`",
                        d.display(),
                        crate::accuracy::reference::MANIFEST,
                        d.display()
                    ),
                ));
            }
        } else if !zoo {
            return Err(c.err(
                "accuracy",
                "reference",
                "a model file needs its FP32 reference folder here (`acceval reference --model FILE --out DIR`)".into(),
            ));
        }
        Ok(())
    }

    fn check_agreement(&self, c: &Checker) -> Result<(), ProfileError> {
        let a = &self.accuracy;
        for (k, v) in [
            ("min_top1", a.min_top1),
            ("min_top5", a.min_top5),
            ("min_f1", a.min_f1),
        ] {
            if let Some(v) = v {
                c.range("accuracy", k, v, 0.0, 1.0, true)?;
            }
        }
        if let Some(v) = a.max_mae {
            c.range("accuracy", "max_mae", v, 0.0, 1e12, true)?;
        }
        if let Some(v) = a.max_mape_pct {
            c.range("accuracy", "max_mape_pct", v, 0.0, 1e6, true)?;
        }
        Ok(())
    }

    fn check_speed(&self, c: &Checker) -> Result<(), ProfileError> {
        let q = self.speed.percentile;
        if !(q > 0.0 && q < 100.0) {
            return Err(c.err("speed", "percentile", format!("{q} must be in (0, 100)")));
        }
        if let Some(g) = self.speed.peak_gflops {
            c.range("speed", "peak_gflops", g, 0.0, 1e9, false)?;
        }
        if let Some(k) = self.speed.pipeline_workers {
            c.count("speed", "pipeline_workers", k as u64, 1)?;
            let max = crate::measure::pipelined::MAX_WORKERS;
            if k > max {
                return Err(c.err(
                    "speed",
                    "pipeline_workers",
                    format!("{k} must lie in [1, {max}]"),
                ));
            }
            if self.speed.mode != crate::report::schema::bench::BenchMode::Pipeline {
                return Err(c.err(
                    "speed",
                    "pipeline_workers",
                    "pipelines decode and pre-processing with the model: it needs mode = \"pipeline\"".into(),
                ));
            }
        }
        if let Some(m) = self.speed.pipeline_instances {
            c.count("speed", "pipeline_instances", m as u64, 1)?;
            let max = crate::measure::pipelined::MAX_INSTANCES;
            if m > max {
                return Err(c.err(
                    "speed",
                    "pipeline_instances",
                    format!("{m} must lie in [1, {max}]"),
                ));
            }
            if self.speed.pipeline_workers.is_none() {
                return Err(c.err(
                    "speed",
                    "pipeline_instances",
                    "model instances take the pipelined run's prepared inputs: it needs pipeline_workers".into(),
                ));
            }
        }
        let mut prev: Option<(Level, &SpeedLevel)> = None;
        for l in [Level::C1, Level::C2, Level::C3, Level::C4] {
            let table = format!("speed.levels.{l}");
            let Some(v) = self.speed.levels.get(&l) else {
                return Err(ProfileError {
                    file: c.file.to_string(),
                    key: table.clone(),
                    line: line_of(c.text, "speed", "").or(line_of(c.text, "speed", "required")),
                    message: "missing: every level C1..C4 needs max_latency_ms and min_fps".into(),
                });
            };
            c.range(&table, "max_latency_ms", v.max_latency_ms, 0.0, 1e9, false)?;
            c.range(&table, "min_fps", v.min_fps, 0.0, 1e9, true)?;
            if let Some((pl, pv)) = prev
                && (v.max_latency_ms < pv.max_latency_ms || v.min_fps > pv.min_fps)
            {
                return Err(c.err(
                    &table,
                    "max_latency_ms",
                    format!("{l} must be no more demanding than {pl} (C1 is the most demanding)"),
                ));
            }
            prev = Some((l, v));
        }
        Ok(())
    }

    fn check_policy(&self, c: &Checker) -> Result<(), ProfileError> {
        let p = &self.policy;
        c.count("policy", "warmup", p.warmup as u64, 0)?;
        c.count("policy", "runs", p.runs as u64, 1)?;
        c.range(
            "policy",
            "warmup_time_s",
            p.warmup_time_s,
            0.0,
            MAX_SECONDS,
            true,
        )?;
        c.range("policy", "duration_s", p.duration_s, 0.0, MAX_SECONDS, true)?;
        c.range(
            "policy",
            "interval_ms",
            p.interval_ms,
            0.0,
            MAX_SECONDS * 1e3,
            true,
        )?;
        c.count("policy", "sample_ms", p.sample_ms, 0)?;
        c.range("policy", "max_cv", p.max_cv, 0.0, 100.0, true)?;
        c.range("policy", "stability", p.stability, 0.0, 100.0, true)
    }

    fn check_qps(&self, c: &Checker) -> Result<(), ProfileError> {
        let Some(q) = &self.qps else { return Ok(()) };
        if let Err(e) = crate::load::slo::parse(&q.slo) {
            return Err(c.err("qps", "slo", e.problem.to_string()));
        }
        c.range("qps", "min_qps", q.min_qps, 0.0, 1e9, false)?;
        if !(0.0..1.0).contains(&q.error_budget) {
            return Err(c.err(
                "qps",
                "error_budget",
                format!("{} must lie in [0, 1)", q.error_budget),
            ));
        }
        c.range(
            "qps",
            "step_duration_s",
            q.step_duration_s,
            0.0,
            MAX_SECONDS,
            false,
        )?;
        c.range("qps", "warmup_s", q.warmup_s, 0.0, MAX_SECONDS, true)?;
        c.range("qps", "max_rate", q.max_rate, 0.0, 1e9, false)?;
        c.range("qps", "precision", q.precision, 0.0, 1.0, false)
    }

    fn check_llm(&self, c: &Checker, dir: &Path) -> Result<(), ProfileError> {
        let Some(l) = &self.llm else { return Ok(()) };
        if !(1..=1000).contains(&l.concurrency) {
            return Err(c.err(
                "llm",
                "concurrency",
                format!("{} must lie in [1, 1000]", l.concurrency),
            ));
        }
        if l.warmup > 1000 {
            return Err(c.err(
                "llm",
                "warmup",
                format!("{} must lie in [0, 1000]", l.warmup),
            ));
        }
        for (k, v) in [
            ("max_first_token_ms", l.max_first_token_ms),
            ("max_tpot_ms", l.max_tpot_ms),
            ("min_throughput", l.min_throughput),
            ("min_generate_speed", l.min_generate_speed),
        ] {
            if let Some(v) = v {
                c.range("llm", k, v, 0.0, 1e9, false)?;
            }
        }
        let cfg = dir.join(&l.synthetic_config);
        let parsed = std::fs::read(&cfg)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string())
            });
        if let Err(why) = parsed {
            return Err(c.err(
                "llm",
                "synthetic_config",
                format!("'{}' is not a readable JSON file: {why}", cfg.display()),
            ));
        }
        Ok(())
    }

    fn check_train(&self, c: &Checker) -> Result<(), ProfileError> {
        let Some(t) = &self.train else { return Ok(()) };
        if !crate::train::workload::WORKLOADS.contains(&t.workload.as_str()) {
            return Err(c.err(
                "train",
                "workload",
                format!(
                    "'{}' is not a built-in workload; they are: {}",
                    t.workload,
                    crate::train::workload::WORKLOADS.join(", ")
                ),
            ));
        }
        c.count("train", "epochs", t.epochs as u64, 1)?;
        for (k, v) in [
            ("batch", t.batch),
            ("samples", t.samples),
            ("eval_samples", t.eval_samples),
        ] {
            if let Some(v) = v {
                c.count("train", k, v as u64, 1)?;
            }
        }
        if t.max_time_to_target_s.is_some() && t.target.is_none() {
            return Err(c.err(
                "train",
                "max_time_to_target_s",
                "needs a target (METRIC<=X or METRIC>=X) to time".into(),
            ));
        }
        for (k, v) in [
            ("max_time_to_target_s", t.max_time_to_target_s),
            ("max_step_p90_ms", t.max_step_p90_ms),
            (
                "min_throughput_samples_per_s",
                t.min_throughput_samples_per_s,
            ),
        ] {
            if let Some(v) = v {
                c.range("train", k, v, 0.0, 1e9, false)?;
            }
        }
        Ok(())
    }

    /// The strictest (most demanding) speed level whose thresholds a measurement meets.
    pub fn speed_level(&self, latency_ms: f64, fps: f64) -> Option<Level> {
        [Level::C1, Level::C2, Level::C3, Level::C4]
            .into_iter()
            .find(|l| {
                self.speed
                    .levels
                    .get(l)
                    .is_some_and(|t| latency_ms <= t.max_latency_ms && fps >= t.min_fps)
            })
    }
}

/// Whether an achieved Table 5 level meets a required one (C1 is the most demanding, so a
/// requirement of C2 is met by C1 or C2) — the opposite direction of Table 3.
pub fn speed_meets(achieved: Option<Level>, required: Level) -> bool {
    achieved.is_some_and(|a| a <= required)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Vec<(String, String)> {
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles"))
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn shipped_profiles_are_valid() {
        let all = shipped();
        assert_eq!(all.len(), 5);
        for (f, t) in &all {
            let p = Profile::parse(t, f).unwrap_or_else(|e| panic!("{e}"));
            assert!(f.ends_with(&format!("{}.toml", p.name)));
        }
    }

    #[test]
    fn typos_and_bad_values_name_the_key_and_line() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("line-inspection-realtime.toml"))
            .unwrap();
        let typo = t.replace("max_latency_ms", "max_latencyms");
        let e = Profile::parse(&typo, &f).unwrap_err();
        assert_eq!(e.key, "max_latencyms");
        let want = typo
            .lines()
            .position(|l| l.contains("max_latencyms"))
            .unwrap()
            + 1;
        assert_eq!(e.line, Some(want), "{e}");
        let bad = t.replace("percentile = 90", "percentile = 190");
        let e = Profile::parse(&bad, &f).unwrap_err();
        assert_eq!(e.key, "speed.percentile");
        assert!(
            e.line.is_some() && e.to_string().contains("(0, 100)"),
            "{e}"
        );
        let bad = t.replace("\"int8\"]", "\"int4\"]");
        let e = Profile::parse(&bad, &f).unwrap_err();
        assert_eq!(e.key, "model.precisions");
    }

    #[test]
    fn speed_levels_and_their_direction() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("line-inspection-realtime.toml"))
            .unwrap();
        let p = Profile::parse(&t, &f).unwrap();
        assert_eq!(p.speed_level(30.0, 30.0), Some(Level::C1));
        assert_eq!(p.speed_level(30.0, 20.0), Some(Level::C2));
        assert_eq!(p.speed_level(5000.0, 0.1), None);
        assert!(speed_meets(Some(Level::C1), Level::C2));
        assert!(!speed_meets(Some(Level::C3), Level::C2));
        assert!(!speed_meets(None, Level::C4));
    }

    /// `[speed] pipeline_workers` and `pipeline_instances`: the pipelined module's FPS, only
    /// in pipeline mode, the instances only beside the workers, each at least 1.
    #[test]
    fn pipeline_keys_are_checked_with_their_key() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("bigdata-forecast.toml"))
            .unwrap();
        let piped = t.replacen(
            "mode = \"pipeline\"",
            "mode = \"pipeline\"\npipeline_workers = 2",
            1,
        );
        assert_eq!(
            Profile::parse(&piped, &f).unwrap().speed.pipeline_workers,
            Some(2)
        );
        let inst = piped.replacen(
            "pipeline_workers = 2",
            "pipeline_workers = 2\npipeline_instances = 2",
            1,
        );
        assert_eq!(
            Profile::parse(&inst, &f).unwrap().speed.pipeline_instances,
            Some(2)
        );
        // (what is refused, the profile, the key the error names, a phrase it holds)
        let refused = [
            (
                "model-only with pipeline_workers",
                piped.replacen("mode = \"pipeline\"", "mode = \"model-only\"", 1),
                "speed.pipeline_workers",
                "",
            ),
            (
                "0 workers",
                piped.replacen("pipeline_workers = 2", "pipeline_workers = 0", 1),
                "speed.pipeline_workers",
                "",
            ),
            (
                "instances without workers",
                inst.replacen("pipeline_workers = 2\n", "", 1),
                "speed.pipeline_instances",
                "needs pipeline_workers",
            ),
            (
                "0 instances",
                inst.replacen("pipeline_instances = 2", "pipeline_instances = 0", 1),
                "speed.pipeline_instances",
                "",
            ),
        ];
        for (what, text, key, phrase) in refused {
            let e = Profile::parse(&text, &f).expect_err(what);
            assert_eq!(e.key, key, "{what}: {e}");
            assert!(e.to_string().contains(phrase), "{what}: {e}");
        }
    }

    /// Every field with a closed set of values is its enum: serde refuses anything else with
    /// the key and the line (no string comparison is left in `check`).
    #[test]
    fn closed_sets_are_typed_and_their_errors_name_key_and_line() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("bigdata-forecast.toml"))
            .unwrap();
        let p = Profile::parse(&t, &f).unwrap();
        assert_eq!(p.model.speed_precision, Precision::Fp32);
        assert_eq!(
            p.speed.mode,
            crate::report::schema::bench::BenchMode::Pipeline
        );
        assert!(p.speed.levels.contains_key(&Level::C4));
        let with_train =
            format!("{t}\n[train]\nworkload = \"lstm-load-forecast\"\ntarget = \"mae_mw<=30\"\n");
        let p = Profile::parse(&with_train, &f).unwrap();
        let target = p.train.unwrap().target.unwrap();
        assert_eq!(
            (target.metric.as_str(), target.op.as_str(), target.value),
            ("mae_mw", "<=", 30.0)
        );
        // [cluster]: the profile's bounds, checked with their key and line.
        let with_cluster = format!("{t}\n[cluster]\nmin_fps = 123.0\nmax_imbalance = 1.5\n");
        let k = Profile::parse(&with_cluster, &f).unwrap().cluster.unwrap();
        assert_eq!(
            (k.min_ranks, k.min_fps, k.max_imbalance),
            (2, 123.0, Some(1.5))
        );
        for (from, to, key) in [
            ("min_fps = 123.0", "min_fps = -1.0", "cluster.min_fps"),
            (
                "max_imbalance = 1.5",
                "max_imbalance = 0.5",
                "cluster.max_imbalance",
            ),
            ("max_imbalance = 1.5", "max_ranks = 3", "max_ranks"),
        ] {
            let bad = with_cluster.replacen(from, to, 1);
            let e = Profile::parse(&bad, &f).expect_err(to);
            assert_eq!(e.key, key, "{to}: {e}");
            let want = bad.lines().position(|l| l.contains(to)).unwrap() + 1;
            assert_eq!(e.line, Some(want), "{to}: {e}");
        }
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "speed_precision = \"fp32\"",
                "speed_precision = \"fp64\"",
                "model.speed_precision",
                "fp64",
            ),
            (
                "mode = \"pipeline\"",
                "mode = \"fast\"",
                "speed.mode",
                "fast",
            ),
            ("[speed.levels.C4]", "[speed.levels.C5]", "C5", "C5"),
            (
                "require = [\"cpu\"]",
                "require = [\"gpu\"]",
                "telemetry.require",
                "gpu",
            ),
            (
                "target = \"mae_mw<=30\"",
                "target = \"mae_mw\"",
                "train.target",
                "METRIC<=X",
            ),
        ];
        for (from, to, key, said) in cases {
            let src = if from.starts_with("target") {
                &with_train
            } else {
                &t
            };
            assert!(src.contains(from), "{from}");
            let bad = src.replacen(from, to, 1);
            let e = Profile::parse(&bad, &f).expect_err(to);
            assert_eq!(&e.key, key, "{to}: {e}");
            let want = bad.lines().position(|l| l.contains(to)).unwrap() + 1;
            assert_eq!(e.line, Some(want), "{to}: {e}");
            assert!(e.to_string().contains(said), "{to}: {e}");
        }
    }

    /// Bad profiles from the hostile-input campaign: each is an error naming its key.
    #[test]
    fn hostile_profiles_are_errors_naming_the_key() {
        let (f, t) = shipped()
            .into_iter()
            .find(|(f, _)| f.ends_with("bigdata-forecast.toml"))
            .unwrap();
        let cases: &[(&str, &str, &str)] = &[
            (
                "name = \"lstm-load-forecast\"",
                "name = \"/etc/passwd\"",
                "model.name",
            ),
            (
                "name = \"lstm-load-forecast\"",
                "name = \"missing.onnx\"",
                "model.name",
            ),
            ("duration_s = 10.0", "duration_s = inf", "policy.duration_s"),
            ("duration_s = 10.0", "duration_s = nan", "policy.duration_s"),
            (
                "duration_s = 10.0",
                "duration_s = -1.0",
                "policy.duration_s",
            ),
            ("runs = 100", "runs = 1000000000000000000", "policy.runs"),
            (
                "warmup = 10",
                "warmup = 1000000000000000000",
                "policy.warmup",
            ),
            (
                "sample_ms = 1000",
                "sample_ms = 1000\nmax_cv = nan",
                "policy.max_cv",
            ),
            (
                "sample_ms = 1000",
                "sample_ms = 1000\nmax_cv = -1.0",
                "policy.max_cv",
            ),
            (
                "sample_ms = 1000",
                "sample_ms = 1000\nstability = -1.0",
                "policy.stability",
            ),
            ("precision = 0.1", "precision = 0.0", "qps.precision"),
            ("precision = 0.1", "precision = -0.5", "qps.precision"),
            (
                "step_duration_s = 2.0",
                "step_duration_s = inf",
                "qps.step_duration_s",
            ),
            ("warmup_s = 0.5", "warmup_s = nan", "qps.warmup_s"),
            ("runs = 100", "runs = true", "policy.runs"),
        ];
        for (from, to, key) in cases {
            assert!(t.contains(from), "{from}");
            let bad = t.replacen(from, to, 1);
            let e = Profile::parse(&bad, &f).expect_err(to);
            assert_eq!(&e.key, key, "{to}: {e}");
            assert!(e.line.is_some(), "{to}: {e}");
        }
    }
}
